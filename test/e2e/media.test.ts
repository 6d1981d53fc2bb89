// End to end with real media: the service as a process, its local nodes running nginx with the
// RTMP module, ffmpeg publishing and playing where the API says. A stream travels from a
// publisher through the origin endpoint 4 chose to a player on the edge endpoint 5 chose; an ABR
// ladder goes through the transcoder to two renditions played from edges; a stream that stops
// publishing is unbound. Every wait is bounded; every process is stopped, pass or fail.
import test from 'ava';
import { inService, waitForEvents } from '../helpers/events.js';
import { request } from '../helpers/http.js';
import { leftovers, play, playFrames, publish } from '../helpers/media.js';
import { mediaService } from '../helpers/process.js';
import { until } from '../helpers/until.js';
import { RTMP_PORT, rtmpGroup } from '../helpers/fixtures.js';

const PASSWORD = 'media-e2e-password';
const GROUPS = [
  rtmpGroup({
    firstAddress: '127.0.70.2',
    origins: { min: 1, max: 1, limit: 20 },
    edges: { min: 1, max: 1, limit: 50 },
    transcoders: { min: 1, max: 1, limit: 4 },
    timing: { streamTimeout: '2s', publishTimeout: '30s' },
  }),
];

interface Assignment {
  serverAddress: string;
  scope: string;
  name: string;
  nodeId: string;
  role: string;
  port?: number;
  protocol?: string;
  url: string;
  token?: string;
}
interface StreamView {
  name: string;
  state: string;
  subscribers: number;
  renditions?: string[];
}

test('a stream travels from a publisher through the chosen origin to a player on the chosen edge; ABR renditions through the transcoder; a stopped stream is unbound', async (t) => {
  const { svc, token, tools, ffmpegs, dataDir } = await mediaService(t, 'switchyard-media-e2e-', GROUPS, PASSWORD);
  const get = async <T>(path: string, status = 200): Promise<T> => {
    const r = await request(svc.url, 'GET', path, undefined, { authorization: `Bearer ${token}` });
    if (r.status !== status) throw new Error(`GET ${path}: ${r.status} ${r.text}`);
    return r.json as T;
  };
  const streams = () => get<StreamView[]>('/as/v1/streams');
  const started = Date.now();
  const up = await waitForEvents(svc.url, token, (seen) => inService(seen).size >= 3, { timeoutMs: 30_000 });
  t.log(`three nginx-rtmp nodes in service ${Date.now() - started} ms after the service listened`);

  // Endpoint 4: an origin, with its real RTMP listener.
  const origin = await get<Assignment>('/as/v1/streams/live/cam1/publish');
  t.like(origin, { role: 'origin', protocol: 'rtmp', port: RTMP_PORT, scope: 'live', name: 'cam1' });
  t.regex(origin.serverAddress, /^127\.0\.70\.\d+$/);
  const publishedAt = Date.now();
  // The answer's url: the node admits the token in it (docs/security.md), and nothing else.
  t.is(origin.url, `rtmp://${origin.serverAddress}:${origin.port}/${origin.scope}/${origin.name}?token=${origin.token}`);
  const publisher = publish(ffmpegs, tools.ffmpeg, origin.url);
  await until(async () => (await streams()).find((s) => s.name === 'cam1')?.state === 'LIVE', 15_000, 'cam1 to turn LIVE');
  t.log(`cam1 LIVE ${Date.now() - publishedAt} ms after the publisher started`);

  // Endpoint 5: an edge under that origin; a player there decodes video, and is counted.
  const edge = await get<Assignment>('/as/v1/streams/live/cam1/subscribe');
  t.like(edge, { role: 'edge', protocol: 'rtmp', port: RTMP_PORT });
  t.not(edge.serverAddress, origin.serverAddress);
  const watching = play(ffmpegs, tools, edge.url, 6, 25_000);
  await until(async () => ((await streams()).find((s) => s.name === 'cam1')?.subscribers ?? 0) >= 1, 20_000, 'the viewer to be counted on cam1');
  // Per-stream statistics, from what the nodes' nginx stat pages say (docs/api.md): the publisher's
  // rate, codecs and resolution, its uptime, and the viewer on its edge.
  interface Stats {
    uptimeSeconds: number | null;
    viewers: number;
    publisher: { nodeId: string; bitrate: number | null; video: { codec?: string; width?: number; height?: number } | null; audio: { codec?: string } | null } | null;
    nodes: Array<{ nodeId: string; viewers: number; bitrateOut: number | null }>;
  }
  const stats = await until(
    async () => {
      const s = await get<Stats>('/as/v1/streams/default/cam1/stats');
      return s.viewers >= 1 && (s.publisher?.bitrate ?? 0) > 0 ? s : false;
    },
    20_000,
    "cam1's statistics to show its publisher's rate and its viewer",
  );
  t.like(stats.publisher, { nodeId: origin.nodeId, video: { codec: 'H264', width: 426, height: 240 }, audio: { codec: 'AAC' } });
  t.true(stats.publisher!.bitrate! > 10_000 && stats.publisher!.bitrate! < 50_000_000, `a plausible rate: ${stats.publisher!.bitrate}`);
  t.true((stats.uptimeSeconds ?? -1) >= 0);
  t.is(stats.nodes.find((n) => n.nodeId === edge.nodeId)?.viewers, 1);
  t.log(`cam1: ${stats.publisher!.bitrate} bit/s in, up ${stats.uptimeSeconds} s, ${stats.viewers} viewer`);
  const played = await watching;
  t.true(played.frames >= 60, `frames decoded from the edge in 6 s of 25 fps: ${played.frames}\n${played.output}`);
  t.deepEqual([played.width, played.height], [426, 240]);
  t.log(`first frame on the edge ${played.firstFrameMs} ms after the player started`);

  // ABR: a provision, a publisher through the transcoder, two renditions from edges.
  const ladder = {
    streamName: 'show',
    region: 'here',
    streams: [
      { name: 'show_240', level: 1, videoBR: 400_000, videoWidth: 426, videoHeight: 240, videoFPS: 25, audioBR: 64_000 },
      { name: 'show_144', level: 2, videoBR: 150_000, videoWidth: 256, videoHeight: 144, videoFPS: 15, audioBR: 48_000 },
    ],
  };
  t.is((await request(svc.url, 'POST', '/as/v1/provision/default', ladder, { authorization: `Bearer ${token}` })).status, 201);
  const transcoder = await get<Assignment>('/as/v1/streams/stream/default/show?transcode=true');
  t.is(transcoder.role, 'transcoder');
  // Endpoint 2 answers without a port (as the specification says); the node's listener is in the group's detail.
  const nodes = (await get<{ nodeList: Array<{ id: string; listeners: { publish?: { protocol: string; port: number } } }> }>('/as/v1/nodegroups/default')).nodeList;
  t.deepEqual(nodes.find((n) => n.id === transcoder.nodeId)?.listeners.publish, { protocol: 'rtmp', port: RTMP_PORT });
  const abrAt = Date.now();
  t.is(new URL(transcoder.url).port, String(RTMP_PORT));
  const abrPublisher = publish(ffmpegs, tools.ffmpeg, transcoder.url, '640x360');
  const live = await until(
    async () => {
      const s = (await streams()).find((x) => x.name === 'show');
      return s?.state === 'LIVE' ? s : false;
    },
    30_000,
    'show to turn LIVE on its origin (renditions pushed by the transcoder)',
  );
  t.deepEqual(live.renditions, ['show_240', 'show_144']);
  t.log(`show LIVE through the transcoder ${Date.now() - abrAt} ms after its publisher started`);
  for (const r of ladder.streams) {
    const e = await get<Assignment>(`/as/v1/streams/live/${r.name}/subscribe`);
    t.like(e, { role: 'edge', protocol: 'rtmp', port: RTMP_PORT, name: r.name });
    const p = await playFrames(ffmpegs, tools, e.url, r.videoFPS, (l) => t.log(l), 3, 25_000);
    t.true(p.frames >= r.videoFPS, `${r.name}: ${p.frames} frames\n${p.output}`);
    t.deepEqual([p.width, p.height], [r.videoWidth, r.videoHeight], r.name);
    t.log(`${r.name}: first frame on the edge after ${p.firstFrameMs} ms, ${p.frames} frames`);
  }

  // The publishers stop: the streams leave the origin's stat page and are unbound after streamTimeout.
  const since = up.at(-1)!.seq;
  await publisher.stop();
  await abrPublisher.stop();
  const stoppedAt = Date.now();
  const gone = await waitForEvents(svc.url, token, (seen) => ['cam1', 'show'].every((name) => seen.some((e) => e.type === 'stream.unbound' && e.stream === name)), { since, timeoutMs: 30_000 });
  t.log(`both streams unbound ${Date.now() - stoppedAt} ms after their publishers stopped (streamTimeout 2 s)`);
  t.regex((gone.find((e) => e.type === 'stream.unbound') as { reason?: string }).reason ?? '', /not published/);
  t.deepEqual(await streams(), []);

  // A clean stop of the service stops its agents, their nginx and whatever nginx ran.
  svc.proc.kill('SIGTERM');
  t.is(await Promise.race([svc.exited, new Promise<string>((r) => setTimeout(() => r('timeout'), 15_000))]), 0);
  await until(async () => leftovers(dataDir).length === 0, 5000, 'no process of the nodes left');
});
