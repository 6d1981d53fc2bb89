// The WebRTC proxy asks the group's admission webhook exactly as endpoints 4 and 5 do (docs/webrtc.md,
// "The signalling proxy"; docs/security.md, "Who may publish and play"): before a node is handed
// out, the operator's app hears the action, the stream and the client's `credential`; a refusal is a
// 403 ADMISSION_DENIED problem a browser can read (CORS), and nothing is bound or sent to a node.
// Our proxy with one werift origin on 127.4.3.x (real media through it when allowed); SM2's proxy
// shapes with the Red5 SDK's `token` connectionParam on a group that has no node yet.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { inService, waitForEvents } from '../helpers/events.js';
import { body } from '../helpers/http.js';
import { startTestService } from '../helpers/service.js';
import { mediaClients, SDP } from '../helpers/webrtc.js';
import { localGroup } from '../helpers/fixtures.js';

interface Asked {
  action: string;
  stream: string;
  credential: string | null;
}

/** The app: allows the credential 'let-me-in', refuses anything else with a reason; keeps what it was asked. */
async function app(t: { teardown(f: () => Promise<void>): void }) {
  const asked: Asked[] = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const ask = JSON.parse(raw) as Asked;
      asked.push(ask);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(ask.credential === 'let-me-in' ? { allow: true } : { allow: false, reason: `no pass for ${ask.stream}` }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  const webhook = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/admit`, secret: `whsec_${randomBytes(24).toString('base64')}`, timeout: '10s' };
  return { asked, webhook };
}

const group = (firstAddress: string, webhook: object, min: number) => ({
  ...localGroup({
    name: 'rtc',
    firstAddress,
    local: { backend: 'werift' },
    roles: { origin: {}, transcoder: {} },
    origins: { min, max: 1, limit: 20 },
    edges: null,
    timing: { nodeTimeout: '5s' },
  }),
  admission: { webhook },
});

const OFFER = 'v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n';
const post = (url: string) =>
  fetch(url, { method: 'POST', headers: { 'content-type': SDP, origin: 'https://player.example' }, body: OFFER }).then(async (r) => ({
    status: r.status,
    type: r.headers.get('content-type'),
    cors: r.headers.get('access-control-allow-origin'),
    node: r.headers.get('x-switchyard-node'),
    json: (await r.json()) as { code: string; detail?: string; error?: string },
  }));

test("the proxy asks the group's admission webhook before it hands out a node: refused, 403 ADMISSION_DENIED and nothing bound; allowed, media flows", async (t) => {
  const { asked, webhook } = await app(t);
  const svc = await startTestService({ groups: [group('127.4.3.2', webhook, 1)], config: { defaultNodeGroup: 'rtc' } });
  const { publisher, viewer } = await mediaClients(t, () => svc.close());
  await waitForEvents(svc.url, svc.adminToken, (s) => inService(s).size === 1, { timeoutMs: 30_000 });
  const base = `${svc.url}/as/v1/proxy`;
  const auth = { headers: { authorization: `Bearer ${svc.adminToken}` } };

  // Refused: a problem a browser reads, no node named, nothing bound.
  const refused = await fetch(`${base}/whip/live/cam1?credential=nope`, { method: 'POST', headers: { ...auth.headers, 'content-type': SDP, origin: 'https://player.example' }, body: OFFER });
  t.is(refused.status, 403);
  t.is(refused.headers.get('content-type'), 'application/problem+json');
  t.truthy(refused.headers.get('access-control-allow-origin'));
  t.is(refused.headers.get('x-switchyard-node'), null);
  const problem = (await refused.json()) as { code: string; detail: string };
  t.is(problem.code, 'ADMISSION_DENIED');
  t.regex(problem.detail, /no pass for cam1/);
  t.like(asked.at(-1), { action: 'publish', stream: 'cam1', credential: 'nope' });
  t.deepEqual(body<unknown[]>(await svc.get('/as/v1/streams')), [], 'nothing bound');

  // Allowed: the publisher's session is made on the origin, and a viewer asked the same way plays.
  const published = await publisher.connect(`${base}/whip/live/cam1?credential=let-me-in`, auth);
  t.is(published.status, 201, published.text);
  t.like(asked.at(-1), { action: 'publish', stream: 'cam1', credential: 'let-me-in' });
  const before = asked.length;
  t.like(await post(`${base}/whep/live/cam1`), { status: 401 }, 'no app token: refused before the app is asked');
  t.is(asked.length, before);
  const denied = await fetch(`${base}/whep/live/cam1`, { method: 'POST', headers: { ...auth.headers, 'content-type': SDP }, body: OFFER });
  t.is(denied.status, 403, 'no credential');
  t.like(asked.at(-1), { action: 'play', stream: 'cam1', credential: null });
  const watched = await viewer.connect(`${base}/whep/live/cam1?credential=let-me-in`, auth);
  t.is(watched.status, 201, watched.text);
  t.like(asked.at(-1), { action: 'play', stream: 'cam1', credential: 'let-me-in' });
  await viewer.media(10, 1);
});

test("SM2's proxy shapes ask the webhook too, with the Red5 SDK's `token` connectionParam as the credential", async (t) => {
  const { asked, webhook } = await app(t);
  // No node: a refusal never gets as far as choosing one.
  const svc = await startTestService({
    groups: [group('127.4.3.10', webhook, 0)],
    config: { defaultNodeGroup: 'rtc', compat: { red5sm2: { enabled: true, anonymousLookups: true } } },
  });
  t.teardown(() => svc.close());
  const refused = await post(`${svc.url}/as/v1/proxy/whip/live/cam9?nodeGroup=rtc&requestId=publisher-1&token=stolen`);
  t.like(refused, { status: 403, type: 'application/problem+json', node: null, json: { code: 'ADMISSION_DENIED' } });
  t.truthy(refused.cors);
  t.like(asked.at(-1), { action: 'publish', stream: 'cam9', credential: 'stolen' });
  t.like(await post(`${svc.url}/as/v1/proxy/whep/live/cam9?nodeGroup=rtc&token=stolen`), { status: 403, json: { code: 'ADMISSION_DENIED' } });
  t.like(asked.at(-1), { action: 'play', stream: 'cam9', credential: 'stolen' });
  t.deepEqual(body<unknown[]>(await svc.get('/as/v1/streams')), [], 'nothing bound');
});
