// The `janus` engine against real Janus gateways, each in a network namespace of its own, with
// werift clients offering the segment's address and VP8 that ffmpeg encodes: publish (WHIP) and
// play (WHEP, the bridged offers) on an origin, origin → edge by RTP forwarding asked for over the
// agents' relay routes, and everything torn down (forwards, mountpoints, namespaces).
// Run under the heavy-test lock (HELPERS.md): flock /tmp/switchyard-heavy.lock npx ava dist/test/integration/janus-engine.test.js
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import test, { type ExecutionContext } from 'ava';
import { AdmissionGate } from '../../src/agent/admission/gate.js';
import { AdminStats } from '../../src/agent/webrtc/janus/admin-stats.js';
import { serveRelay } from '../../src/agent/webrtc/janus/relay.js';
import { parseSubnet } from '../../src/policy/network/netns-plan.js';
import { CLIENT_ADDRESS, JANUS_SUBNET, janusNode, janusTools, leftovers, type TestNode, within } from '../helpers/janus.js';
import { VideoSource, WhepViewer, WhipPublisher } from '../helpers/webrtc.js';
import { until } from '../helpers/until.js';

const tools = janusTools();
const run = `${process.pid}`;

/** The origin's agent routes for its children (relay.ts), on its own loopback address. */
async function relayServer(t: { teardown(fn: () => Promise<void>): void }, node: TestNode, host: string, gate: AdmissionGate = node.gate): Promise<{ port: number; server: Server }> {
  const server = createServer((req, res) => {
    void serveRelay(req, res, { source: node.engine, gate, subnet: parseSubnet(JANUS_SUBNET) }).then((served) => {
      if (!served) res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port: (server.address() as AddressInfo).port, server };
}

/** The shared werift clients (test/helpers/webrtc.ts), offering the segment's address, with werift's own codec numbers (VP8 98, Opus 96). */
async function clients(t: ExecutionContext) {
  const source = await VideoSource.start(tools.ffmpeg);
  const made: Array<WhipPublisher | WhepViewer> = [];
  t.teardown(async () => {
    await Promise.allSettled(made.map((c) => c.close()));
    await source.stop();
  });
  return {
    async publish(url: string): Promise<WhipPublisher> {
      const p = new WhipPublisher(source);
      made.push(p);
      const a = await p.connect(url, { address: CLIENT_ADDRESS });
      if (a.status !== 201) throw new Error(`WHIP ${url}: ${a.status} ${a.text}`);
      return p;
    },
    async watch(url: string): Promise<WhepViewer> {
      const v = new WhepViewer();
      made.push(v);
      const a = await v.connect(url, { address: CLIENT_ADDRESS });
      if (a.status !== 201) throw new Error(`WHEP ${url}: ${a.status} ${a.text}`);
      return v;
    },
  };
}

test.serial('a WHIP publisher on an origin, a WHEP viewer on the origin and one on an edge fed by RTP forwarding; all torn down', async (t) => {
  t.timeout(90_000);
  const origin = await janusNode(t, { nodeId: `jt-origin-${run}`, role: 'origin', loopback: '127.5.0.2' });
  const edge = await janusNode(t, { nodeId: `jt-edge-${run}`, role: 'edge', loopback: '127.5.0.3' });
  t.is(origin.runtime.version?.version, 1102, 'Debian 12 ships Janus 1.1.2');
  t.is(origin.runtime.mediaAddress, '10.213.0.2');
  edge.engine.setParent(origin.link);
  const c = await clients(t);

  const pub = await c.publish(origin.url('whip', 'cam'));
  const answer = pub.answered!.text;
  // The publisher's offer said actpass; Janus was told active and answers passive (no 1 s DTLS stall).
  t.regex(answer, /^a=setup:passive\r?$/m);
  t.regex(answer, /^a=candidate:.* 10\.213\.0\.2 \d+ typ host/m, 'Janus offers its namespace address');
  // The heartbeat's media of a Janus publisher: since when, and its codec; its bytes once read from Janus (refresh()).
  const counts = (n: typeof origin) => n.engine.streams().map(({ media: _, ...s }) => s);
  t.deepEqual(counts(origin), [{ name: 'cam', publishing: true, subscribers: 0 }]);
  t.deepEqual(origin.engine.streams()[0]?.media?.video, { codec: 'VP8' });
  t.is(origin.engine.streams()[0]?.media?.audio, undefined, 'the publisher sends no audio');

  // A viewer on the origin itself: its own mountpoint, fed by forwarding from its own room. werift
  // offers VP8 as 98 and Opus as 96: the mountpoint is made with those numbers.
  const near = await c.watch(origin.url('whep', 'cam'));
  t.regex(near.answered!.text, /^a=setup:passive\r?$/m, 'the bridged answer makes the client the DTLS client');
  t.regex(near.answered!.text, /^m=video 9 UDP\/TLS\/RTP\/SAVPF 98\r?$/m, 'answered under the viewer’s own payload type');
  t.notRegex(near.answered!.text, /^a=extmap/m);
  await near.media(100, 1, 20_000);
  t.deepEqual(near.size, { width: 320, height: 240 });

  // A viewer on the edge: a mountpoint there, fed by the origin's forward (asked for over HTTP).
  const far = await c.watch(edge.url('whep', 'cam'));
  await far.media(100, 1, 20_000);
  t.log(`edge viewer: first keyframe ${Math.round(far.firstFrameMs ?? -1)} ms after its offer`);
  t.deepEqual(edge.engine.streams(), [{ name: 'cam', publishing: false, subscribers: 1 }], 'no media before Janus’s counters were read');
  // The origin counts its own viewer and the edge it feeds (named by its address: this gate asks no credential).
  t.deepEqual(counts(origin), [{ name: 'cam', publishing: true, subscribers: 2, relays: ['10.213.0.3'] }]);
  // Janus's own counters, read over its admin API as at each heartbeat: the publisher's bytes in and
  // those sent to the origin's viewer; the edge's bytes out to its viewer (bytes in it cannot count).
  const counted = async (n: TestNode) => {
    await n.engine.refresh();
    return n.engine.streams()[0]?.media;
  };
  const atOrigin = await until(
    async () => {
      const m = await counted(origin);
      return (m?.bytesIn ?? 0) > 0 && (m?.bytesOut ?? 0) > 0 && m;
    },
    10_000,
    'the origin’s counters',
  );
  t.like(atOrigin, { video: { codec: 'VP8' } });
  const atEdge = await until(
    async () => {
      const m = await counted(edge);
      return (m?.bytesOut ?? 0) > 0 && m;
    },
    10_000,
    'the edge’s counters',
  );
  t.is(atEdge.bytesIn, undefined);
  // They only grow while media flows.
  const later = await until(
    async () => {
      const m = await counted(origin);
      return (m?.bytesIn ?? 0) > atOrigin.bytesIn! && (m?.bytesOut ?? 0) > atOrigin.bytesOut! && m;
    },
    10_000,
    'the origin’s counters to grow',
  );
  t.true(later.since === atOrigin.since);
  // Janus's own refusal of a wrong admin secret: a failure logged, nothing counted, nothing thrown.
  const refused: string[] = [];
  const wrong = new AdminStats({ admin: () => ({ url: origin.runtime.admin!.url, secret: 'not-the-admin-secret' }), log: (m, e) => refused.push(`${m} ${JSON.stringify(e)}`) });
  await wrong.poll([{ id: 'x', stream: 'cam', counts: 'in', janusSession: 1, janusHandle: 1 }]);
  t.is(wrong.of('cam'), undefined);
  t.regex(refused.join('\n'), /could not read janus counters.*403/);
  t.true(edge.logs.some((l) => l.startsWith('mountpoint fed') && l.includes(origin.nodeId)));
  t.true(origin.logs.some((l) => l.startsWith('forwarding') && l.includes('10.213.0.3')));

  // The edge viewer leaves (WHEP DELETE): its mountpoint and the origin's forward to it go.
  const location = far.answered!.location!;
  await far.close();
  t.deepEqual(edge.engine.streams(), []);
  await edge.engine.refresh();
  t.deepEqual(edge.engine.streams(), [], 'a stream without sessions has no counters left');
  t.true(edge.logs.some((l) => l.startsWith('mountpoint ended')));
  t.is((await fetch(location, { method: 'DELETE' })).status, 404, 'a session ends once');
  t.deepEqual(counts(origin), [{ name: 'cam', publishing: true, subscribers: 1 }]);

  // The publisher is dropped (its binding moved): the origin reports nothing published.
  await origin.engine.dropPublisher('cam');
  t.deepEqual(
    origin.engine.streams().filter((x) => x.publishing),
    [],
  );
});

test.serial('an edge whose parent changes feeds the same mountpoint from the new parent: its viewer stays, the old forward goes', async (t) => {
  t.timeout(90_000);
  const a = await janusNode(t, { nodeId: `jt-a-${run}`, role: 'origin', loopback: '127.5.0.6' });
  const b = await janusNode(t, { nodeId: `jt-b-${run}`, role: 'origin', loopback: '127.5.0.7' });
  const edge = await janusNode(t, { nodeId: `jt-e-${run}`, role: 'edge', loopback: '127.5.0.8' });
  const c = await clients(t);
  // The stream published on both origins (its publisher moved, say): one source, two publishers.
  await c.publish(a.url('whip', 'cam'));
  await c.publish(b.url('whip', 'cam'));

  edge.engine.setParent(a.link);
  const v = await c.watch(edge.url('whep', 'cam'));
  await v.media(50, 1, 20_000);
  t.deepEqual(a.engine.streams()[0]?.relays, ['10.213.0.8']);

  edge.engine.setParent(b.link);
  await until(async () => edge.logs.some((l) => l.startsWith('mountpoint fed') && l.includes(b.nodeId)), 10_000, 'the edge to be fed from the new parent');
  await until(async () => a.engine.streams()[0]?.relays === undefined, 10_000, 'the first parent to let go of its forward');
  t.deepEqual(b.engine.streams()[0]?.relays, ['10.213.0.8']);
  // The same viewer, no new session: packets and a keyframe keep coming, now from the new parent.
  await v.media(v.packets + 50, v.keyframes + 1, 20_000);
  t.is(edge.engine.streams()[0]?.subscribers, 1);
});

test.serial('an edge asks for a forward without a relay credential, or for another host: refused', async (t) => {
  t.timeout(60_000);
  const origin = await janusNode(t, { nodeId: `jt-origin2-${run}`, role: 'origin', loopback: '127.5.0.4' });
  const strict = new AdmissionGate('g', origin.nodeId);
  strict.update({ required: true, keys: [{ kid: 'k1', key: Buffer.alloc(32, 7).toString('base64url') }], leewayMs: 0 }, undefined);
  const relays = await relayServer(t, origin, '127.5.0.4', strict);
  const url = `http://127.5.0.4:${relays.port}/relay/janus/cam`;
  const body = JSON.stringify({ host: '10.213.0.9', media: [{ kind: 'video', port: 30000, rtcpPort: 30001, pt: 96 }] });
  const anonymous = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  t.is(anonymous.status, 401);
  t.regex(((await anonymous.json()) as { detail: string }).detail, /no token/);
  const forged = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer a.b.c' }, body });
  t.is(forged.status, 401);

  // With an open gate: a host outside the segment is refused, and a stream nobody publishes is 404.
  const open = await relayServer(t, origin, '127.5.0.4');
  const openUrl = `http://127.5.0.4:${open.port}/relay/janus/cam`;
  const elsewhere = await fetch(openUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ host: '192.0.2.77', media: [{ kind: 'video', port: 30000, rtcpPort: 30001, pt: 96 }] }),
  });
  t.is(elsewhere.status, 403);
  const unpublished = await fetch(openUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  t.is(unpublished.status, 404);
  const junk = await fetch(openUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"host":1}' });
  t.is(junk.status, 400);
});

test.serial('Janus killed outright: the node says why it is not ready, and Janus is started again', async (t) => {
  t.timeout(60_000);
  const node = await janusNode(t, { nodeId: `jt-crash-${run}`, role: 'origin', loopback: '127.5.0.5' });
  const before = node.runtime.pid!;
  t.true(before > 0);
  t.deepEqual(node.engine.status(), { ready: true, problem: null });
  const restarted = new Promise<void>((resolve) => {
    node.runtime.onRestart = resolve;
  });
  // While Janus is down the node says so (the heartbeat's ready:false and problem).
  let whileDown: ReturnType<typeof node.engine.status> | null = null;
  const engineOnDown = node.runtime.onDown;
  node.runtime.onDown = () => {
    engineOnDown?.();
    whileDown = node.engine.status();
  };
  process.kill(before, 'SIGKILL');
  await within(20_000, 'janus is restarted', restarted);
  t.not(node.runtime.pid, before);
  t.is(whileDown!.ready, false);
  t.regex(whileDown!.problem ?? '', /restarting \(attempt 1\)/);
  t.deepEqual(node.engine.status(), { ready: true, problem: null });
  t.true(
    node.logs.some((l) => l.startsWith('janus down')),
    node.logs.join('\n'),
  );
});

test.serial('nothing of the nodes is left on the machine once they stopped', async (t) => {
  // The namespaces of every node above (their teardowns ran): gone, links and bridge with them.
  const plans = [
    ['jt-origin', '127.5.0.2'],
    ['jt-edge', '127.5.0.3'],
    ['jt-origin2', '127.5.0.4'],
    ['jt-crash', '127.5.0.5'],
    ['jt-a', '127.5.0.6'],
    ['jt-b', '127.5.0.7'],
    ['jt-e', '127.5.0.8'],
  ].map(([n, loopback]) => ({ nodeId: `${n}-${run}`, loopback: loopback! }));
  const { netnsPlan } = await import('../../src/policy/network/netns-plan.js');
  const all = plans.map((p) => netnsPlan(p.nodeId, p.loopback, JANUS_SUBNET));
  t.deepEqual(await until(async () => (leftovers(all).length === 0 ? [] : false), 5000, 'no leftovers').catch(() => leftovers(all)), []);
});
