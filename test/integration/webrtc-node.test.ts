// A werift origin and edge as their agents run them (WebRtcBackend: WHIP/WHEP endpoints, the
// engine, the admission gate), without a control plane: keys and orders are given as heartbeat
// replies would give them. Real WebRTC on loopback (127.4.0.x): a publisher sends ffmpeg's VP8
// to the origin, a viewer on the edge receives it through the edge's pull; what a node refuses
// (no token, another node's token, the wrong action, a bad body) is refused before any media.
import test from 'ava';
import { AdmissionGate } from '../../src/agent/admission/gate.js';
import { WebRtcBackend } from '../../src/agent/webrtc/backend.js';
import { WeriftEngine } from '../../src/agent/webrtc/werift/engine.js';
import { AdmissionIssuer } from '../../src/admission/issuer.js';
import { NodeKeys } from '../../src/admission/node-keys.js';
import type { Role } from '../../src/domain/vocabulary.js';
import { mediaClients, SDP, WhepViewer, WhipPublisher } from '../helpers/webrtc.js';

const GROUP = 'rtc';
const issuer = new AdmissionIssuer(new NodeKeys(Buffer.alloc(32, 7)), () => 0);
const silent = () => {};

async function node(t: { teardown(f: () => Promise<void>): void }, id: string, role: Role, address: string) {
  const gate = new AdmissionGate(GROUP, id);
  gate.update({ required: true, keys: [issuer.keyOf(GROUP, id)], leewayMs: 30_000 }, undefined);
  const backend = new WebRtcBackend({ engine: new WeriftEngine({ role, scope: 'live', address, log: silent }), gate, role, scope: 'live', address, port: 0, maxSessions: 50, log: silent });
  await backend.start();
  t.teardown(() => backend.stop());
  const base = `http://${address}:${(await backend.report()).listeners[role === 'origin' ? 'publish' : 'subscribe']!.port}`;
  return { backend, base, token: (action: 'publish' | 'play', stream: string) => issuer.client(GROUP, id, action, stream, 60_000).token };
}

test('a publisher on a werift origin reaches a viewer on a werift edge through the edge’s pull; nodes refuse what they must', async (t) => {
  const origin = await node(t, 'o1', 'origin', '127.4.0.2');
  const edge = await node(t, 'e1', 'edge', '127.4.0.3');
  const { source, publisher, viewer } = await mediaClients(t);
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  // What the origin reports before anything: WHIP and WHEP listeners, nothing published.
  const before = await origin.backend.report();
  t.like(before, { ready: true, listeners: { publish: { protocol: 'whip' }, subscribe: { protocol: 'whep' } }, streams: [] });
  const edgeListeners = (await edge.backend.report()).listeners;
  t.like(edgeListeners, { subscribe: { protocol: 'whep' } });
  t.is(edgeListeners.publish, undefined, 'an edge takes no publishers');

  // Refused before any media: no token, a token of another node, for another stream, for playing.
  const offerAt = (url: string, headers: Record<string, string> = {}, body = 'v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n', type = SDP) =>
    fetch(url, { method: 'POST', headers: { 'content-type': type, ...headers }, body }).then(async (r) => ({ status: r.status, text: await r.text() }));
  const whip = `${origin.base}/whip/live/cam1`;
  t.is((await publisher.connect(whip)).status, 401, 'no token');
  t.is((await publisher.connect(whip, { headers: bearer(edge.token('publish', 'cam1')) })).status, 401, "another node's token");
  t.is((await publisher.connect(whip, { headers: bearer(origin.token('publish', 'cam2')) })).status, 401, "another stream's token");
  t.is((await publisher.connect(whip, { headers: bearer(origin.token('play', 'cam1')) })).status, 401, 'a token for playing');
  t.is((await offerAt(whip, bearer(origin.token('publish', 'cam1')), '{}', 'application/json')).status, 415);
  t.is((await offerAt(whip, bearer(origin.token('publish', 'cam1')), 'not sdp')).status, 400);
  t.is((await offerAt(whip, bearer(origin.token('publish', 'cam1')), `v=0\r\n${'a=x\r\n'.repeat(20_000)}`)).status, 413);
  t.is((await offerAt(`${origin.base}/whip/other/cam1`, bearer(origin.token('publish', 'cam1')))).status, 404, 'another scope');
  t.is((await offerAt(`${edge.base}/whip/live/cam1`, bearer(edge.token('publish', 'cam1')))).status, 405, 'an edge takes no publishers');
  t.deepEqual((await origin.backend.report()).streams, [], 'nothing refused left a session');

  // The publisher, admitted, is counted as publishing.
  const published = await publisher.connect(whip, { headers: bearer(origin.token('publish', 'cam1')) });
  t.is(published.status, 201, published.text);
  t.regex(published.location ?? '', /\/sessions\/[0-9a-f-]{36}$/);
  t.like((await origin.backend.report()).streams, [{ name: 'cam1', publishing: true, subscribers: 0 }]);
  const second = await new WhipPublisher(source).connect(whip, { headers: bearer(origin.token('publish', 'cam1')) });
  t.is(second.status, 409, 'one publisher per stream');

  // A viewer on the edge before it has a parent: nothing to pull from.
  const whep = `${edge.base}/whep/live/cam1`;
  t.is((await viewer.connect(whep, { headers: bearer(edge.token('play', 'cam1')) })).status, 503);
  await edge.backend.apply({ parent: { nodeId: 'o1', address: '127.4.0.2', port: before.listeners.subscribe!.port, protocol: 'whep', credential: issuer.relay(GROUP, 'o1', 'e1') }, drain: false });
  t.is((await viewer.connect(whep)).status, 401, 'a viewer without a token');
  const watched = await viewer.connect(whep, { headers: bearer(edge.token('play', 'cam1')) });
  t.is(watched.status, 201, watched.text);
  await viewer.media(100, 1);
  t.deepEqual(viewer.size, { width: 320, height: 240 });
  t.log(`viewer on the edge: first keyframe ${Math.round(viewer.firstFrameMs ?? -1)} ms after its offer`);
  t.like((await edge.backend.report()).streams, [{ name: 'cam1', publishing: false, subscribers: 1 }]);
  const atOrigin = await origin.backend.report();
  t.like(atOrigin.streams, [{ name: 'cam1', publishing: true, subscribers: 1 }], "the edge's pull plays at the origin");
  t.is(atOrigin.metrics['connections.clusterchildren'], 1);

  // Draining, the origin takes no new viewer, but a node under it still pulls (draining never cuts media).
  await origin.backend.apply({ parent: null, drain: true });
  const another = new WhepViewer();
  t.teardown(() => another.close());
  t.is((await another.connect(`${origin.base}/whep/live/cam1`, { headers: bearer(origin.token('play', 'cam1')) })).status, 503);
  t.is((await another.connect(`${origin.base}/whep/live/cam1`, { headers: bearer(issuer.relay(GROUP, 'o1', 'e2')) })).status, 201);
  await another.close();
  await origin.backend.apply({ parent: null, drain: false });

  // The control plane says the stream moved away: its publisher is dropped.
  const lost = publisher.lost();
  await origin.backend.apply({ parent: null, drain: false, drop: { at: Date.now(), streams: ['cam1'] } });
  await lost;
  t.like((await origin.backend.report()).streams, [{ name: 'cam1', publishing: false }]);

  // DELETE ends a session once.
  const del = await fetch(watched.location!, { method: 'DELETE' });
  t.is(del.status, 200);
  t.is((await fetch(watched.location!, { method: 'DELETE' })).status, 404);
  t.is((await fetch(`${edge.base}/whep/live/cam1`, { method: 'OPTIONS' })).headers.get('accept-post'), SDP);
});

test('through a relay: origin → relay → edge, each pulling from its parent with its own credential', async (t) => {
  const origin = await node(t, 'o1', 'origin', '127.4.0.4');
  const relay = await node(t, 'r1', 'relay', '127.4.0.5');
  const edge = await node(t, 'e1', 'edge', '127.4.0.6');
  const { publisher, viewer } = await mediaClients(t);
  const portOf = async (n: typeof origin) => (await n.backend.report()).listeners.subscribe!.port;
  await relay.backend.apply({ parent: { nodeId: 'o1', address: '127.4.0.4', port: await portOf(origin), protocol: 'whep', credential: issuer.relay(GROUP, 'o1', 'r1') }, drain: false });
  // The edge presents the credential its parent (the relay) gave it, not the origin's.
  await edge.backend.apply({ parent: { nodeId: 'r1', address: '127.4.0.5', port: await portOf(relay), protocol: 'whep', credential: issuer.relay(GROUP, 'r1', 'e1') }, drain: false });
  t.is((await publisher.connect(`${origin.base}/whip/live/cam1`, { headers: { authorization: `Bearer ${origin.token('publish', 'cam1')}` } })).status, 201);
  t.is((await viewer.connect(`${edge.base}/whep/live/cam1`, { headers: { authorization: `Bearer ${edge.token('play', 'cam1')}` } })).status, 201);
  await viewer.media(100, 1);
  t.like((await relay.backend.report()).streams, [{ name: 'cam1', publishing: false, subscribers: 1 }], "the edge's pull plays at the relay");
  t.is((await relay.backend.report()).metrics['connections.clusterchildren'], 1);
  t.is((await origin.backend.report()).metrics['connections.clusterchildren'], 1, 'the origin sees the relay alone');
});
