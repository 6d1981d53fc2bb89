// The `janus` engine against real Janus gateways, each in a network namespace of its own, with
// werift clients offering the segment's address and VP8 that ffmpeg encodes: publish (WHIP) and
// play (WHEP, the bridged offers) on an origin, origin → edge by RTP forwarding asked for over the
// agents' relay routes, and everything torn down (forwards, mountpoints, namespaces).
// Run under the heavy-test lock (HELPERS.md): flock /tmp/switchyard-heavy.lock npx ava dist/test/integration/janus-engine.test.js
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { AdmissionGate } from '../../src/agent/admission/gate.js';
import { serveRelay } from '../../src/agent/webrtc/janus/relay.js';
import { parseSubnet } from '../../src/os/netns-plan.js';
import { CLIENT_ADDRESS, JANUS_SUBNET, janusNode, janusTools, leftovers, type TestNode } from '../helpers/janus.js';
import { publisher, vp8Source, viewer, within } from '../helpers/janus-clients.js';
import { eventually } from '../helpers/events.js';

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

test.serial('a WHIP publisher on an origin, a WHEP viewer on the origin and one on an edge fed by RTP forwarding; all torn down', async (t) => {
  t.timeout(90_000);
  const origin = await janusNode(t, { nodeId: `jt-origin-${run}`, role: 'origin', loopback: '127.5.0.2' });
  const edge = await janusNode(t, { nodeId: `jt-edge-${run}`, role: 'edge', loopback: '127.5.0.3' });
  t.is(origin.runtime.version?.version, 1102, 'Debian 12 ships Janus 1.1.2');
  t.is(origin.runtime.mediaAddress, '10.213.0.2');
  const relays = await relayServer(t, origin, '127.5.0.2');
  edge.engine.setParent({ nodeId: origin.nodeId, address: '127.5.0.2', port: relays.port });

  const source = await vp8Source(t, tools.ffmpeg);
  const pub = await publisher(t, source, CLIENT_ADDRESS, async (offer) => (await origin.engine.publish('cam', offer)).sdp);
  // The publisher's offer said actpass; Janus was told active and answers passive (no 1 s DTLS stall).
  t.regex(pub.answer, /^a=setup:passive\r?$/m);
  t.regex(pub.answer, /^a=candidate:.* 10\.213\.0\.2 \d+ typ host/m, 'Janus offers its namespace address');
  await within(20_000, 'the publisher connects', pub.connected);
  t.deepEqual(origin.engine.streams(), [{ name: 'cam', publishing: true, subscribers: 0 }]);

  // A viewer on the origin itself: its own mountpoint, fed by forwarding from its own room.
  const near = await viewer(t, CLIENT_ADDRESS, async (offer) => (await origin.engine.play('cam', offer)).sdp);
  t.regex(near.answer, /^a=setup:passive\r?$/m, 'the bridged answer makes the client the DTLS client');
  t.notRegex(near.answer, /^a=extmap/m);
  await within(20_000, 'the origin viewer connects', near.connected);
  await within(20_000, 'the origin viewer gets 100 packets and a keyframe', near.received(100, 1));

  // A viewer on the edge: a mountpoint there, fed by the origin's forward (asked for over HTTP).
  let farId = '';
  const far = await viewer(t, CLIENT_ADDRESS, async (offer) => {
    const session = await edge.engine.play('cam', offer);
    farId = session.id;
    return session.sdp;
  });
  await within(20_000, 'the edge viewer connects', far.connected);
  await within(20_000, 'the edge viewer gets 100 packets and a keyframe', far.received(100, 1));
  t.deepEqual(edge.engine.streams(), [{ name: 'cam', publishing: false, subscribers: 1 }]);
  // The origin counts its own viewer and the edge it feeds (named by its address: this gate asks no credential).
  t.deepEqual(origin.engine.streams(), [{ name: 'cam', publishing: true, subscribers: 2, relays: ['10.213.0.3'] }]);
  t.true(edge.logs.some((l) => l.startsWith('mountpoint fed') && l.includes(origin.nodeId)));
  t.true(origin.logs.some((l) => l.startsWith('forwarding') && l.includes('10.213.0.3')));

  // The edge viewer leaves (WHEP DELETE): its mountpoint and the origin's forward to it go.
  t.true(await edge.engine.end(farId));
  t.deepEqual(edge.engine.streams(), []);
  t.true(edge.logs.some((l) => l.startsWith('mountpoint ended')));
  t.false(await edge.engine.end(farId), 'a session ends once');
  // The edge released its forward: the origin no longer feeds it.
  t.deepEqual(origin.engine.streams(), [{ name: 'cam', publishing: true, subscribers: 1 }]);
  await far.close();

  // The publisher is dropped (its binding moved): the origin reports nothing published.
  await origin.engine.dropPublisher('cam');
  t.deepEqual(
    origin.engine.streams().filter((s) => s.publishing),
    [],
  );
  await near.close();
  await pub.close();
});

test.serial('an edge whose parent changes feeds the same mountpoint from the new parent: its viewer stays, the old forward goes', async (t) => {
  t.timeout(90_000);
  const a = await janusNode(t, { nodeId: `jt-a-${run}`, role: 'origin', loopback: '127.5.0.6' });
  const b = await janusNode(t, { nodeId: `jt-b-${run}`, role: 'origin', loopback: '127.5.0.7' });
  const edge = await janusNode(t, { nodeId: `jt-e-${run}`, role: 'edge', loopback: '127.5.0.8' });
  const ra = await relayServer(t, a, '127.5.0.6');
  const rb = await relayServer(t, b, '127.5.0.7');
  // The stream published on both origins (its publisher moved, say): one source, two publishers.
  const source = await vp8Source(t, tools.ffmpeg);
  const pa = await publisher(t, source, CLIENT_ADDRESS, async (offer) => (await a.engine.publish('cam', offer)).sdp);
  const pb = await publisher(t, source, CLIENT_ADDRESS, async (offer) => (await b.engine.publish('cam', offer)).sdp);
  await within(20_000, 'both publishers connect', Promise.all([pa.connected, pb.connected]));

  edge.engine.setParent({ nodeId: a.nodeId, address: '127.5.0.6', port: ra.port });
  const v = await viewer(t, CLIENT_ADDRESS, async (offer) => (await edge.engine.play('cam', offer)).sdp);
  await within(20_000, 'the viewer gets the stream through the first parent', v.received(50, 1));
  t.deepEqual(a.engine.streams()[0]?.relays, ['10.213.0.8']);

  edge.engine.setParent({ nodeId: b.nodeId, address: '127.5.0.7', port: rb.port });
  await eventually(async () => edge.logs.some((l) => l.startsWith('mountpoint fed') && l.includes(b.nodeId)), 10_000, 'the edge to be fed from the new parent');
  await eventually(async () => a.engine.streams()[0]?.relays === undefined, 10_000, 'the first parent to let go of its forward');
  t.deepEqual(b.engine.streams()[0]?.relays, ['10.213.0.8']);
  // The same viewer, no new session: packets and a keyframe keep coming, now from the new parent.
  const [packets, keyframes] = [v.packets, v.keyframes];
  await within(20_000, 'the viewer keeps receiving after the change', v.received(packets + 50, keyframes + 1));
  t.is(edge.engine.streams()[0]?.subscribers, 1);
  await v.close();
  await pa.close();
  await pb.close();
});

test.serial('an edge asks for a forward without a relay credential, or for another host: refused', async (t) => {
  t.timeout(60_000);
  const origin = await janusNode(t, { nodeId: `jt-origin2-${run}`, role: 'origin', loopback: '127.5.0.4' });
  const strict = new AdmissionGate('g', origin.nodeId);
  strict.update({ required: true, keys: [{ kid: 'k1', key: Buffer.alloc(32, 7).toString('base64url') }], leewayMs: 0 }, undefined);
  const relays = await relayServer(t, origin, '127.5.0.4', strict);
  const url = `http://127.5.0.4:${relays.port}/relay/janus/cam`;
  const body = JSON.stringify({ host: '10.213.0.9', media: [{ kind: 'video', port: 30000, rtcpPort: 30001 }] });
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
    body: JSON.stringify({ host: '192.0.2.77', media: [{ kind: 'video', port: 30000, rtcpPort: 30001 }] }),
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
  const { netnsPlan } = await import('../../src/os/netns-plan.js');
  const all = plans.map((p) => netnsPlan(p.nodeId, p.loopback, JANUS_SUBNET));
  t.deepEqual(await eventually(async () => (leftovers(all).length === 0 ? [] : false), 5000, 'no leftovers').catch(() => leftovers(all)), []);
});
