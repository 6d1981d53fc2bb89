// WebRTC end to end on the werift engine (docs/webrtc.md): the service with a local group of
// werift nodes on 127.4.1.x (an origin, two edges), a WHIP publisher sending ffmpeg's VP8 through
// the control plane's proxy, a WHEP viewer through the proxy on an edge counting RTP packets and
// VP8 keyframes. Then the failures an operator meets: the viewer's edge killed (the viewer looks
// up again and plays from the other edge), the publisher's origin killed (FAULT: the binding
// moves, the publisher reconnects to the replacement, the edges pull from it). Sessions without
// a token, and forged session ids, are refused. Waits are on events and on media; every client
// retries as a player would, within a deadline.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import type { EventRecord } from '../../src/domain/events.js';
import { inService, waitForEvents } from '../helpers/events.js';
import { until } from '../helpers/until.js';
import { body } from '../helpers/http.js';
import { startTestService } from '../helpers/service.js';
import { type Answered, SDP, VideoSource, WhepViewer, WhipPublisher } from '../helpers/webrtc.js';
import { localGroup } from '../helpers/fixtures.js';

const GROUP = 'rtc';

function groupConfig() {
  return localGroup({
    name: GROUP,
    firstAddress: '127.4.1.2',
    local: { backend: 'werift' },
    origins: { min: 1, max: 2, limit: 20 },
    edges: { min: 2, max: 3, limit: 50 },
    // nodeTimeout: a healthy node is not FAULTed by a stalled second or two of this process (the
    // service and the werift clients share it); a killed one is after 4 s.
    timing: { nodeTimeout: '4s', streamTimeout: '20s', publishTimeout: '30s', faultTimeout: '5m' },
  });
}

/** Connects as a client retrying a 503 would (Retry-After, at most a second) until `ok`, within `ms`. */
async function connectUntil(connect: () => Promise<Answered>, ok: (a: Answered) => boolean, ms = 20_000): Promise<Answered> {
  const deadline = Date.now() + ms;
  for (;;) {
    const a = await connect().catch((err: Error) => ({ status: 0, text: err.message, location: null, node: null, ms: 0 }) as Answered);
    if (ok(a)) return a;
    if (Date.now() > deadline) throw new Error(`gave up: last answer ${a.status} ${a.text.slice(0, 200)}`);
    await new Promise((r) => setTimeout(r, a.status === 503 ? 1000 : 250));
  }
}

const stateOf = (events: readonly EventRecord[], id: string) => {
  let state: string | null | undefined;
  for (const e of events) if (e.type === 'node.state' && e.nodeId === id) state = e.to;
  return state;
};

test('WHIP and WHEP through the proxy on werift nodes: media flows origin → edge; an edge killed, then the origin, and clients carry on', async (t) => {
  const svc = await startTestService({ groups: [groupConfig()], config: { defaultNodeGroup: GROUP } });
  const source = await VideoSource.start();
  const publisher = new WhipPublisher(source);
  const viewer = new WhepViewer();
  const direct = new WhepViewer();
  t.teardown(async () => {
    await Promise.allSettled([viewer.close(), direct.close(), publisher.close()]);
    await source.stop();
    if (!t.passed) agentLogs(t, svc.dataDir);
    await svc.close();
  });
  const auth = { authorization: `Bearer ${svc.adminToken}` };
  const whip = `${svc.url}/as/v1/proxy/whip/live/cam1`;
  const whep = `${svc.url}/as/v1/proxy/whep/live/cam1`;
  let seen = await waitForEvents(svc.url, svc.adminToken, (s) => inService(s).size === 3, { timeoutMs: 30_000 });
  const up = seen;
  const nodes = async () => body<{ nodeList: Array<{ id: string; role: string; platform: { pid?: number } }> }>(await svc.get(`/as/v1/nodegroups/${GROUP}`)).nodeList;
  const pidOf = async (id: string) => (await nodes()).find((n) => n.id === id)!.platform.pid!;

  // Refused before a node is chosen: no token, a body that is not SDP, an offer too large.
  t.is((await publisher.connect(whip)).status, 401);
  const post = (url: string, text: string, type = SDP, headers: Record<string, string> = auth) =>
    fetch(url, { method: 'POST', headers: { 'content-type': type, ...headers }, body: text }).then(async (r) => ({
      status: r.status,
      cors: r.headers.get('access-control-allow-origin'),
      json: (await r.json()) as { code: string },
    }));
  t.like(await post(whip, '{"sdp":1}', 'application/json'), { status: 415, cors: '*', json: { code: 'UNSUPPORTED_MEDIA_TYPE' } });
  t.like(await post(whip, 'hello'), { status: 400, json: { code: 'BAD_SDP' } });
  t.like(await post(whip, `v=0\r\n${'a=x\r\n'.repeat(20_000)}`), { status: 413 });
  t.like(await post(`${svc.url}/as/v1/proxy/whip/vod/cam1`, 'v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n'), { status: 400, json: { code: 'VALIDATION_FAILED' } });
  const preflight = await fetch(whip, { method: 'OPTIONS' });
  t.is(preflight.status, 204);
  t.is(preflight.headers.get('accept-post'), SDP);
  t.regex(preflight.headers.get('access-control-allow-headers') ?? '', /Authorization/);

  // The publisher, through the proxy, on the origin endpoint 4 would choose.
  const published = await connectUntil(
    () => publisher.connect(whip, { headers: auth }),
    (a) => a.status === 201,
  );
  const origin = published.node!;
  t.true(nodesOf(up, 'origin').includes(origin), `the proxy names the origin it chose (${origin})`);
  t.regex(published.location ?? '', /\/as\/v1\/proxy\/sessions\/[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
  seen = await waitForEvents(svc.url, svc.adminToken, (s) => s.some((e) => e.type === 'stream.live' && e.stream === 'cam1'), { since: seen.at(-1)!.seq });

  // A viewer through the proxy on an edge: real packets and VP8 keyframes, 320x240.
  const watched = await connectUntil(
    () => viewer.connect(whep, { headers: auth, silenceMs: 2000 }),
    (a) => a.status === 201,
  );
  const edge1 = watched.node!;
  t.true(nodesOf(up, 'edge').includes(edge1));
  await viewer.media(100, 1);
  t.deepEqual(viewer.size, { width: 320, height: 240 });
  t.log(`viewer through the proxy: first keyframe ${Math.round(viewer.firstFrameMs!)} ms after its offer`);

  // Per-stream statistics from the nodes' heartbeats: the publisher's bit rate, codec and size as the
  // origin counts them, and what the edge takes in from its pull and sends its viewer.
  type Stats = {
    uptimeSeconds: number | null;
    publisher: { nodeId: string; bitrate: number | null; video: { width?: number; fps?: number } | null } | null;
    nodes: Array<{ nodeId: string; bitrateIn: number | null; bitrateOut: number | null }>;
  };
  const stats = await until(async () => {
    const s = body<Stats>(await svc.get(`/as/v1/streams/${GROUP}/cam1/stats`));
    const atEdge = s.nodes.find((n) => n.nodeId === edge1);
    return (s.publisher?.bitrate ?? 0) > 0 && s.publisher?.video?.width && (atEdge?.bitrateIn ?? 0) > 0 && (atEdge?.bitrateOut ?? 0) > 0 ? s : undefined;
  });
  t.like(stats.publisher, { nodeId: origin, video: { codec: 'VP8', width: 320, height: 240 } });
  // ffmpeg sends 25 frames a second; what the origin counted depends on the machine's pace.
  t.true((stats.publisher?.video?.fps ?? 0) > 0, `the publisher's frame rate: ${stats.publisher?.video?.fps}`);
  t.log(`the publisher's frame rate at the origin: ${stats.publisher?.video?.fps} fps`);
  t.not(stats.uptimeSeconds, null);

  // Endpoint 5 tells the truth: WHEP on that edge, and its url works as given (the token in it).
  const answer = body<{ protocol: string; nodeId: string; url: string; port: number }>(await svc.get('/as/v1/streams/live/cam1/subscribe'));
  t.like(answer, { protocol: 'whep', nodeId: edge1 });
  t.regex(answer.url, /^http:\/\/127\.4\.1\.\d+:\d+\/whep\/live\/cam1\?token=/);
  t.is((await direct.connect(answer.url.split('?')[0]!)).status, 401, 'at the node without a token');
  await connectUntil(
    () => direct.connect(answer.url),
    (a) => a.status === 201,
  );
  await direct.media(50, 1);
  await direct.close();
  await until(async () => ((await svc.get('/as/v1/streams')).json as Array<{ name: string; subscribers: number }>).find((s) => s.name === 'cam1')?.subscribers === 1, 10_000, 'one viewer counted');

  // The viewer's edge is killed: the viewer notices, looks up again, plays from the other edge.
  const lostEdge = viewer.lost();
  process.kill(await pidOf(edge1), 'SIGKILL');
  await lostEdge;
  const replayed = await connectUntil(
    () => viewer.connect(whep, { headers: auth, silenceMs: 2000 }),
    (a) => a.status === 201,
  );
  t.not(replayed.node, edge1, 'another edge');
  await viewer.media(100, 1);
  t.log(`viewer back on ${replayed.node} after its edge was killed`);

  // The publisher's origin is killed: FAULT, the binding moves to the replacement, the publisher reconnects there.
  const since = seen.at(-1)!.seq;
  const lostOrigin = publisher.lost();
  const viewerLost = viewer.lost();
  process.kill(await pidOf(origin), 'SIGKILL');
  await lostOrigin;
  const republished = await connectUntil(
    () => publisher.connect(whip, { headers: auth }),
    (a) => a.status === 201,
    30_000,
  );
  t.not(republished.node, origin, 'a new origin');
  seen = await waitForEvents(
    svc.url,
    svc.adminToken,
    (s) => stateOf(s, origin) === 'FAULT' && s.some((e) => e.type === 'stream.moved' && e.stream === 'cam1' && e.from === origin && e.to === republished.node),
    { since },
  );
  t.pass('the binding moved to the origin the publisher reconnected to');
  // The edges follow the new origin: a viewer plays again.
  await viewerLost;
  await connectUntil(
    () => viewer.connect(whep, { headers: auth, silenceMs: 2000 }),
    (a) => a.status === 201,
    30_000,
  );
  await viewer.media(100, 1);

  // PATCH on the Location reaches the session's node: trickled candidates taken, an ICE restart refused.
  const patch = (body: string, type = 'application/trickle-ice-sdpfrag') =>
    fetch(viewer.answered!.location!, { method: 'PATCH', headers: { 'content-type': type }, body }).then((r) => ({ status: r.status, node: r.headers.get('x-switchyard-node') }));
  t.like(await patch('a=mid:0\r\na=candidate:1 1 udp 2130706431 127.0.0.1 9 typ host\r\n'), { status: 204, node: viewer.answered!.node });
  t.like(await patch('a=ice-ufrag:zzzz\r\na=ice-pwd:0123456789abcdefghijkl\r\n'), { status: 405 });
  t.like(await patch('v=0', SDP), { status: 415 });

  // The session's Location is the only way to it: DELETE ends it once; a forged one names nothing.
  const location = viewer.answered!.location!;
  const [payload, mac] = location.split('/').at(-1)!.split('.');
  const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), a: '127.0.0.1', p: 22 })).toString('base64url');
  const del = (url: string) => fetch(url, { method: 'DELETE' }).then(async (r) => ({ status: r.status, json: (await r.json()) as { code?: string } }));
  t.like(await del(location.replace(payload!, forged)), { status: 404, json: { code: 'SESSION_NOT_FOUND' } });
  t.like(await del(`${location.slice(0, -mac!.length)}${'A'.repeat(43)}`), { status: 404 });
  t.like(await del(location), { status: 200 });
  t.like(await del(location), { status: 404 });
});

/** On failure, what each node's agent said last. */
function agentLogs(t: { log(...v: unknown[]): void }, dataDir: string): void {
  try {
    for (const id of readdirSync(join(dataDir, 'nodes'))) {
      t.log(
        `${id}/agent.log:\n${readFileSync(join(dataDir, 'nodes', id, 'agent.log'), 'utf8')
          .split('\n')
          .slice(-15)
          .join('\n')}`,
      );
    }
  } catch {
    /* no nodes */
  }
}

/** Node ids of a role among those seen in service. */
function nodesOf(events: readonly EventRecord[], role: string): string[] {
  return [...new Set(events.filter((e) => e.type === 'node.state' && e.role === role).map((e) => (e as { nodeId: string }).nodeId))];
}
