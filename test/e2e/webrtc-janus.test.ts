// End to end on Janus: the service as a process, on config/examples/webrtc-janus.json's group
// (local nodes on the janus backend, each Janus in a network namespace of its own), a werift WHIP
// publisher with VP8 from ffmpeg through the control plane's proxy to the origin it chose, a werift
// WHEP viewer through the proxy on the edge it chose (fed by RTP forwarding from the origin),
// sessions without a token refused (at the proxy and at the node), sessions ended through their
// proxy Location, and every node, Janus and namespace gone once the service stopped. Run under the
// heavy-test lock.
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { projectPath } from '../../src/paths.js';
import { removeRecordedNetns } from '../../src/os/netns.js';
import { netnsPlan } from '../../src/policy/network/netns-plan.js';
import { inService, waitForEvents } from '../helpers/events.js';
import { body, request } from '../helpers/http.js';
import { CLIENT_ADDRESS, janusTools, leftovers, within } from '../helpers/janus.js';
import { VideoSource, WhepViewer, WhipPublisher } from '../helpers/webrtc.js';
import { spawnService, type ServiceProcess } from '../helpers/process.js';
import { killAgentsOf, tempDir } from '../helpers/service.js';
import { until } from '../helpers/until.js';

const PASSWORD = 'janus-e2e-password';
const FIRST = '127.5.1.2';

/** The example config, on the Janus tests' loopback range and a fast clock. */
function writeConfig(dir: string): { file: string; subnet: string } {
  const example = JSON.parse(readFileSync(projectPath('config', 'examples', 'webrtc-janus.json'), 'utf8')) as {
    nodeGroups: Array<{ platform: { local: Record<string, unknown> }; rules: Array<Record<string, unknown>>; timing: Record<string, unknown> }>;
  };
  const group = example.nodeGroups[0]!;
  group.platform.local.firstAddress = FIRST;
  group.rules = group.rules.map((r) => ({ ...r, min: 1, max: 1 }));
  group.timing = { ...group.timing, heartbeatMs: 300, evaluationInterval: '1s' };
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({ ...example, server: { host: '127.0.0.1', port: 0 }, supervisorTick: '200ms', geoip: { enabled: false } }));
  return { file, subnet: (group.platform.local.janus as { subnet: string }).subnet };
}

interface Assignment {
  serverAddress: string;
  nodeId: string;
  role: string;
  protocol?: string;
  port?: number;
  url: string;
}

test('WHIP and WHEP through the proxy on Janus nodes: origin → edge by RTP forwarding; sessions without a token refused; nothing left', async (t) => {
  t.timeout(120_000);
  const { ffmpeg } = janusTools();
  const dir = tempDir('switchyard-janus-e2e-');
  const dataDir = join(dir, 'data');
  const { file, subnet } = writeConfig(dir);
  let svc: ServiceProcess | null = null;
  const nodeDirs = () => {
    try {
      return readdirSync(join(dataDir, 'nodes')).map((id) => join(dataDir, 'nodes', id));
    } catch {
      return [];
    }
  };
  t.teardown(async () => {
    if (svc && svc.proc.exitCode === null) {
      svc.proc.kill('SIGTERM');
      await Promise.race([svc.exited, new Promise((r) => setTimeout(r, 15_000))]);
      if (svc.proc.exitCode === null) svc.proc.kill('SIGKILL');
    }
    // Whatever a failure left: agents, their Janus, their namespaces.
    killAgentsOf(dataDir);
    for (const d of nodeDirs()) await removeRecordedNetns(d).catch(() => undefined);
    if (!t.passed && svc) t.log(svc.output.slice(-30).join('\n'));
    rmSync(dir, { recursive: true, force: true });
  });

  svc = await spawnService({ SWITCHYARD_CONFIG: file, SWITCHYARD_DATA_DIR: dataDir, SWITCHYARD_ADMIN_PASSWORD: PASSWORD });
  const token = body<{ accessToken: string }>(await request(svc.url, 'POST', '/as/v1/auth/login', { username: 'admin', password: PASSWORD })).accessToken;
  const get = async <T>(path: string): Promise<T> => {
    const r = await request(svc!.url, 'GET', path, undefined, { authorization: `Bearer ${token}` });
    if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${r.text}`);
    return r.json as T;
  };
  const started = Date.now();
  await waitForEvents(svc.url, token, (seen) => inService(seen).size >= 2, { timeoutMs: 60_000 });
  t.log(`two Janus nodes in service ${Date.now() - started} ms after the service listened`);
  const nodes = (await get<{ nodeList: Array<{ id: string; address: string; role: string }> }>('/as/v1/nodegroups/default')).nodeList;
  const plans = nodes.map((n) => netnsPlan(n.id, n.address, subnet));

  const proxy = (protocol: 'whip' | 'whep') => `${svc!.url}/as/v1/proxy/${protocol}/live/cam1`;
  const nodeIds = (role: string) => nodes.filter((n) => n.role === role).map((n) => n.id);
  const app = { authorization: `Bearer ${token}` };

  // Through the proxy, as endpoint 4 chooses: the origin's Janus answers the publisher.
  const source = await VideoSource.start(ffmpeg);
  const pub = new WhipPublisher(source);
  const view = new WhepViewer();
  t.teardown(async () => {
    await Promise.allSettled([view.close(), pub.close()]);
    await source.stop();
  });
  t.is((await pub.connect(proxy('whip'), { address: CLIENT_ADDRESS })).status, 401, 'the proxy wants an app token');
  const whip = await pub.connect(proxy('whip'), { address: CLIENT_ADDRESS, headers: app });
  t.is(whip.status, 201, whip.text);
  t.true(nodeIds('origin').includes(whip.node ?? ''), `the proxy names the origin it chose (${whip.node})`);
  t.regex(whip.location ?? '', /\/as\/v1\/proxy\/sessions\//);
  t.regex(whip.text, /^a=candidate:.* 10\.213\.1\.\d+ \d+ typ host/m, 'the answer is Janus’s, in its namespace');
  t.log(`WHIP through the proxy answered in ${Math.round(whip.ms)} ms`);
  await until(async () => (await get<Array<{ name: string; state: string }>>('/as/v1/streams')).find((s) => s.name === 'cam1')?.state === 'LIVE', 20_000, 'cam1 to turn LIVE');

  // Through the proxy, as endpoint 5 chooses: an edge, whose agent has the origin's Janus forward the stream.
  const whep = await view.connect(proxy('whep'), { address: CLIENT_ADDRESS, headers: app });
  t.is(whep.status, 201, whep.text);
  t.true(nodeIds('edge').includes(whep.node ?? ''), `the proxy names the edge it chose (${whep.node})`);
  await view.media(100, 1, 20_000);
  t.deepEqual(view.size, { width: 320, height: 240 });
  t.log(`WHEP through the proxy answered in ${Math.round(whep.ms)} ms; first keyframe ${Math.round(view.firstFrameMs ?? -1)} ms after the offer`);
  await until(async () => ((await get<Array<{ name: string; subscribers: number }>>('/as/v1/streams')).find((s) => s.name === 'cam1')?.subscribers ?? 0) >= 1, 10_000, 'the viewer to be counted');

  // Per-stream statistics from the nodes' heartbeats, Janus's counters read over its admin API: the
  // publisher's bit rate on the origin, and what the edge sends its viewer (what it takes in from the
  // origin's forward, plain RTP, Janus does not count).
  type Stats = {
    uptimeSeconds: number | null;
    publisher: { nodeId: string; bitrate: number | null; video: { codec?: string } | null } | null;
    nodes: Array<{ nodeId: string; viewers: number; bitrateIn: number | null; bitrateOut: number | null }>;
  };
  const stats = await until(
    async () => {
      const s = await get<Stats>('/as/v1/streams/default/cam1/stats');
      const atEdge = s.nodes.find((n) => n.nodeId === whep.node);
      return (s.publisher?.bitrate ?? 0) > 0 && (atEdge?.bitrateOut ?? 0) > 0 ? { s, atEdge: atEdge! } : undefined;
    },
    20_000,
    'the publisher’s and the edge’s bit rates',
  );
  t.like(stats.s.publisher, { nodeId: whip.node, video: { codec: 'VP8' } });
  t.like(stats.atEdge, { viewers: 1, bitrateIn: null });
  t.not(stats.s.uptimeSeconds, null);
  t.log(`publisher ${stats.s.publisher!.bitrate} bit/s; the edge sends its viewer ${stats.atEdge.bitrateOut} bit/s`);

  // At the node itself, without the token a lookup gives: refused before Janus hears of it.
  const edge = await get<Assignment>('/as/v1/streams/live/cam1/subscribe');
  t.like(edge, { role: 'edge', protocol: 'whep', nodeId: whep.node });
  const bare = await new WhepViewer().connect(edge.url.split('?')[0]!, { address: CLIENT_ADDRESS });
  t.is(bare.status, 401);
  t.regex(bare.text, /not admitted/);

  // The sessions end through their proxy Locations (their DELETE), the viewer first.
  await view.close();
  await pub.close();
  await until(async () => ((await get<Array<{ name: string; subscribers: number }>>('/as/v1/streams')).find((s) => s.name === 'cam1')?.subscribers ?? 0) === 0, 10_000, 'the viewer to be gone');
  // The service stops its nodes: every Janus and namespace goes with them.
  svc.proc.kill('SIGTERM');
  await within(30_000, 'the service stops', svc.exited);
  t.deepEqual(leftovers(plans), []);
});
