// The Red5 WebRTC SDK's requests through SM2's proxy shapes (docs/migrating-from-red5-sm2.md,
// "WebRTC"): WHIPClient and WHEPClient with `endpoint` on /as/v1/proxy/whip|whep/<scope>/<name>
// and their connectionParams in the query, without a token (compat.red5sm2.anonymousLookups).
// One werift origin on 127.4.2.x serves both (a group without edges plays from its origins);
// real VP8 from ffmpeg travels through it. Groups that do not serve WebRTC are refused before
// anything is bound; a client naming a node (`host`) is not obeyed.
import test from 'ava';
import { inService, waitForEvents } from '../helpers/events.js';
import { body } from '../helpers/http.js';
import { staticGroup, startTestService } from '../helpers/service.js';
import { mediaClients, SDP } from '../helpers/webrtc.js';
import { localGroup } from '../helpers/fixtures.js';

test("the Red5 SDK's WHIP and WHEP requests through SM2's proxy shapes carry real media; what a group cannot serve is refused unbound", async (t) => {
  const svc = await startTestService({
    groups: [
      localGroup({
        name: 'rtc',
        firstAddress: '127.4.2.2',
        local: { backend: 'werift' },
        roles: { origin: {}, transcoder: {} },
        origins: { min: 1, max: 1, limit: 20 },
        edges: null,
        timing: { nodeTimeout: '5s' },
      }),
      staticGroup({ name: 'rtmp', regions: ['r1'], nodes: [{ id: 'o1', role: 'origin', region: 'r1' }] }),
    ],
    config: { defaultNodeGroup: 'rtc', compat: { red5sm2: { enabled: true, anonymousLookups: true } } },
  });
  const { publisher, viewer } = await mediaClients(t, () => svc.close());
  await waitForEvents(svc.url, svc.adminToken, (s) => inService(s).size === 1, { timeoutMs: 30_000 });
  const base = `${svc.url}/as/v1/proxy`;
  const streams = async () => body<Array<{ name: string; state: string }>>(await svc.get('/as/v1/streams'));

  // WHIPClient: nodeGroup and its other connectionParams in the query, an app's own (username) too; `host` is not obeyed.
  const published = await publisher.connect(`${base}/whip/live/cam1?nodeGroup=rtc&requestId=publisher-7f3a&signal=true&mode=live&keyFramerate=3000&host=10.0.0.9&username=studio`);
  t.is(published.status, 201, published.text);
  t.regex(published.node ?? '', /^here-origin-/);
  t.regex(published.location ?? '', /\/as\/v1\/proxy\/sessions\//);

  // WHEPClient: requestId, doNotSwitch; the origin serves viewers in a group without edges.
  const watched = await viewer.connect(`${base}/whep/live/cam1?nodeGroup=rtc&requestId=subscriber-1b31&doNotSwitch=false&signal=false`);
  t.is(watched.status, 201, watched.text);
  t.is(watched.node, published.node);
  await viewer.media(100, 1);
  t.deepEqual(viewer.size, { width: 320, height: 240 });

  // Refused before a node is chosen, and nothing bound: a group of RTMP nodes, a transcoder that does not take WHIP.
  const offer = 'v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n';
  const post = (path: string) =>
    fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': SDP }, body: offer }).then(async (r) => ({ status: r.status, json: (await r.json()) as { code: string; error: string } }));
  t.like(await post('/whip/live/cam2?nodeGroup=rtmp'), { status: 409, json: { code: 'PROTOCOL_NOT_SERVED' } });
  t.like(await post('/whip/live/show?nodeGroup=rtc&transcode=true'), { status: 409, json: { code: 'PROTOCOL_NOT_SERVED' } });
  // A room's stream that nothing publishes; a scope that is not the group's (SM2's errors carry `error`).
  t.like(await post('/whep/live/room1/cam2?nodeGroup=rtc'), { status: 404, json: { code: 'STREAM_NOT_FOUND' } });
  const wrongScope = await post('/whip/vod/cam3?nodeGroup=rtc');
  t.is(wrongScope.status, 400);
  t.regex(wrongScope.json.error, /scope/);
  // Too many connectionParams, or a huge one: a 400, not a crash.
  t.like(await post(`/whip/live/cam4?nodeGroup=rtc&${Array.from({ length: 50 }, (_, i) => `p${i}=x`).join('&')}`), { status: 400 });
  t.like(await post(`/whip/live/cam4?nodeGroup=rtc&username=${'x'.repeat(2000)}`), { status: 400 });
  t.deepEqual(
    (await streams()).map((s) => s.name),
    ['cam1'],
    'only the stream published was bound',
  );
});
