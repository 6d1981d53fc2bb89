// Admission through the service (docs/security.md, "Who may publish and play"), over real HTTP:
// lookup answers carry a token and url that the chosen node's own gate (fed by its heartbeat
// reply, as an agent is) admits, and no other node does; edges and transcoders get what their
// parents check; the operator's app decides through a signed webhook (a real receiver checking
// signatures with the standardwebhooks package); an ended stream's publisher is dropped.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { Webhook } from 'standardwebhooks';
import { AdmissionGate } from '../../src/agent/admission/gate.js';
import { SECRET_PLACEHOLDER } from '../../src/config/secrets.js';
import { allInService, type FakeNode } from '../helpers/fake-node.js';
import { staticGroup, startTestService, type TestService } from '../helpers/service.js';

const secret = () => `whsec_${randomBytes(24).toString('base64')}`;
const NODES = ['o1', 'o2', 'e1', 'e2', 't1'];

interface Answer {
  nodeId: string;
  url: string;
  token?: string;
  expiresAt?: string;
}

/** A node's gate as its agent keeps it: fed by the node's heartbeat replies. */
async function gateOf(node: FakeNode, streams: Array<{ name: string; publishing?: boolean }> = []) {
  const reply = await node.beat({ streams });
  const gate = new AdmissionGate(node.group, node.id);
  const dropped = gate.update(reply.admission, reply.drop);
  return { gate, reply, dropped };
}

/** An HTTP receiver for the admission webhook: answers as `decide` says, and keeps what it got. */
async function receiver(decide: (body: { stream: string; credential: string | null; action: string }, req: IncomingMessage, raw: string) => { status: number; body?: unknown } | null) {
  const calls: Array<{ headers: IncomingMessage['headers']; body: string }> = [];
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      calls.push({ headers: req.headers, body: raw });
      const answer = decide(JSON.parse(raw), req, raw);
      if (answer === null) return; // never answers: the lookup's timeout
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(answer.body === undefined ? '' : JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/admit`,
    calls,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

async function service(t: { teardown(f: () => Promise<void>): void }, groups: unknown[]): Promise<TestService> {
  const svc = await startTestService({ groups });
  t.teardown(() => svc.close());
  return svc;
}

test('a lookup answer carries a token and url that the chosen node admits, and no other node, action or stream', async (t) => {
  const svc = await service(t, [staticGroup({ name: 'g' })]);
  const nodes = await allInService(svc, 'g', NODES);
  const pub = (await svc.get('/as/v1/streams/live/cam1/publish?nodeGroup=g')).json as Answer;
  t.regex(pub.url, /^rtmp:\/\/10\.0\.0\.\d+:1935\/live\/cam1\?token=[A-Za-z0-9._-]+$/);
  t.truthy(pub.token && pub.expiresAt);
  const origin = await gateOf(nodes.get(pub.nodeId)!);
  t.true(origin.gate.check('publish', 'cam1', pub.token).ok);
  t.false(origin.gate.check('publish', 'cam2', pub.token).ok, 'another stream');
  t.false(origin.gate.check('play', 'cam1', pub.token).ok, 'another action');
  t.false(origin.gate.check('publish', 'cam1', undefined).ok, 'no token');
  const other = await gateOf(nodes.get(pub.nodeId === 'o1' ? 'o2' : 'o1')!);
  t.false(other.gate.check('publish', 'cam1', pub.token).ok, 'another origin');

  // Endpoint 2 and 5 likewise; a player's token is for its edge.
  const sub = (await svc.get('/as/v1/streams/live/cam1/subscribe?nodeGroup=g')).json as Answer;
  const edge = await gateOf(nodes.get(sub.nodeId)!);
  t.true(edge.gate.check('play', 'cam1', sub.token).ok);
  t.false(origin.gate.check('play', 'cam1', sub.token).ok);
  const two = (await svc.get('/as/v1/streams/stream/g/cam1?transcode=false')).json as Answer;
  t.is(two.nodeId, pub.nodeId);
  t.true(origin.gate.check('publish', 'cam1', two.token).ok);

  // The edge pulls from its parent with the credential its reply carries; the parent admits it.
  t.is(edge.reply.parent?.nodeId, pub.nodeId);
  t.true(origin.gate.check('play', 'cam1', edge.reply.parent?.credential).ok);
  t.true(origin.gate.check('play', 'any-stream', edge.reply.parent?.credential).ok, 'a relay pulls whatever its viewers want');
  t.false(origin.gate.check('publish', 'cam1', edge.reply.parent?.credential).ok, 'never publishes');
  t.false(other.gate.check('play', 'cam1', edge.reply.parent?.credential).ok, 'only at the parent it names');
});

test("a transcoder's job carries, per rendition, what its stream's origin admits", async (t) => {
  const svc = await service(t, [staticGroup({ name: 'g' })]);
  const nodes = await allInService(svc, 'g', NODES);
  const r = { level: 1, videoBR: 1_000_000, videoWidth: 640, videoHeight: 360, videoFPS: 30, audioBR: 64_000 };
  t.is((await svc.send('POST', '/as/v1/provision/g', { streamName: 'show', region: 'r1', streams: [{ ...r, name: 'show_lo' }] })).status, 201);
  const tr = (await svc.get('/as/v1/streams/stream/g/show?transcode=true')).json as Answer;
  t.is(tr.nodeId, 't1');
  const transcoder = await gateOf(nodes.get('t1')!);
  t.true(transcoder.gate.check('publish', 'show', tr.token).ok);
  const job = transcoder.reply.transcode![0]!;
  const origin = await gateOf(nodes.get(job.origin.nodeId)!);
  t.true(origin.gate.check('publish', 'show_lo', job.tokens?.show_lo).ok);
  t.false(origin.gate.check('publish', 'show', job.tokens?.show_lo).ok);
});

test('an ended stream is unbound, and its origin is told to drop the publisher and refuse the tokens issued before', async (t) => {
  const svc = await service(t, [staticGroup({ name: 'g' })]);
  const nodes = await allInService(svc, 'g', NODES);
  const pub = (await svc.get('/as/v1/streams/live/cam1/publish?nodeGroup=g')).json as Answer;
  await nodes.get(pub.nodeId)!.beat({ streams: [{ name: 'cam1', publishing: true }] });
  t.is((await svc.send('POST', '/as/v1/streams/g/cam1/end', undefined)).status, 204);
  t.like((await svc.send('POST', '/as/v1/streams/g/cam1/end', undefined)).json, { status: 404, code: 'STREAM_NOT_FOUND' });
  const { gate, dropped } = await gateOf(nodes.get(pub.nodeId)!, [{ name: 'cam1', publishing: true }]);
  t.deepEqual(dropped, ['cam1']);
  t.false(gate.check('publish', 'cam1', pub.token).ok, 'the old token no longer publishes');
  t.is((await svc.get('/as/v1/streams/live/cam1/subscribe?nodeGroup=g')).status, 404);
  // Looked up anew, the stream publishes again (a token issued in a later second than the drop).
  const again = (await svc.get('/as/v1/streams/live/cam1/publish?nodeGroup=g')).json as Answer;
  const fresh = await gateOf(nodes.get(again.nodeId)!);
  t.is(fresh.reply.drop, undefined);
});

test("the app's webhook decides, signed the Standard Webhooks way: allow, deny, a timeout (fail-closed, or open), a receiver that finds the signature bad; answers are kept briefly", async (t) => {
  const right = secret();
  const wrong = secret();
  const hook = await receiver((body, req, raw) => {
    const verifier = new Webhook(req.url === '/admit-wrong' ? wrong : right);
    try {
      verifier.verify(raw, req.headers as Record<string, string>);
    } catch {
      return { status: 401, body: { reason: 'bad signature' } };
    }
    if (body.credential === 'slow') return null;
    return body.credential === 'let-me-in' ? { status: 200, body: { allow: true } } : { status: 200, body: { allow: false, reason: `no entry for ${body.stream}` } };
  });
  t.teardown(() => hook.close());
  // Answers that must arrive have all the time a loaded machine needs; only the groups asked by a
  // receiver that never answers ('slow') give up soon (500 ms was once too short for a real answer).
  const webhook = (over: object = {}) => ({ url: hook.url, secret: right, timeout: '10s', cacheTtl: '1h', ...over });
  const svc = await service(t, [
    staticGroup({ name: 'g', admission: { webhook: webhook() } }),
    staticGroup({ name: 'closed', admission: { webhook: webhook({ timeout: '500ms' }) } }),
    staticGroup({ name: 'open', admission: { webhook: webhook({ timeout: '500ms', failOpen: true }) } }),
    staticGroup({ name: 'wrong', admission: { webhook: webhook({ url: hook.url.replace('/admit', '/admit-wrong') }) } }),
  ]);
  for (const g of ['g', 'closed', 'open', 'wrong']) await allInService(svc, g, NODES);
  const lookup = (group: string, credential: string) => svc.get(`/as/v1/streams/live/cam1/publish?nodeGroup=${group}&credential=${credential}`);

  const allowed = await lookup('g', 'let-me-in');
  t.is(allowed.status, 200, allowed.text);
  t.truthy((allowed.json as Answer).token);
  const call = JSON.parse(hook.calls.at(-1)!.body);
  t.like(call, { type: 'admission.request', action: 'publish', nodeGroup: 'g', scope: 'live', stream: 'cam1', credential: 'let-me-in', subject: 'admin' });
  t.is(call.client.address, '127.0.0.1');
  t.truthy(hook.calls.at(-1)!.headers['webhook-id'] && hook.calls.at(-1)!.headers['webhook-signature']);

  const denied = await lookup('g', 'nope');
  t.is(denied.status, 403);
  t.like(denied.json, { code: 'ADMISSION_DENIED', status: 403 });
  t.regex((denied.json as { detail: string }).detail, /no entry for cam1/);
  t.is(denied.headers.get('content-type'), 'application/problem+json');

  // Kept: the same (stream, action, credential) asks no more; another credential does.
  const before = hook.calls.length;
  t.is((await lookup('g', 'let-me-in')).status, 200);
  t.is((await lookup('g', 'nope')).status, 403);
  t.is(hook.calls.length, before);

  const slow = await lookup('closed', 'slow');
  t.is(slow.status, 503);
  t.like(slow.json, { code: 'ADMISSION_UNAVAILABLE' });
  t.truthy(slow.headers.get('retry-after'));
  t.is((await lookup('open', 'slow')).status, 200, 'failOpen lets it through');

  // A receiver holding another secret finds every signature bad and refuses: the lookup is refused.
  const forged = await lookup('wrong', 'let-me-in');
  t.is(forged.status, 403);
  t.regex((forged.json as { detail: string }).detail, /bad signature/);
});

test("a webhook's secret is never shown, survives a read-edit-write of the group, and link-local or metadata URLs are refused", async (t) => {
  const svc = await service(t, [staticGroup({ name: 'g', admission: { webhook: { url: 'http://127.0.0.1:9/x', secret: secret() } } })]);
  const detail = (await svc.get('/as/v1/nodegroups/g')).json as { config: { admission: { webhook: { secret: string } } } };
  t.is(detail.config.admission.webhook.secret, SECRET_PLACEHOLDER);
  t.false(JSON.stringify(detail).includes('whsec_') && !JSON.stringify(detail).includes(SECRET_PLACEHOLDER));
  const spec = { ...staticGroup({ name: 'g', admission: { webhook: { url: 'http://127.0.0.1:9/x', secret: SECRET_PLACEHOLDER } } }) };
  const replaced = await svc.send('PUT', '/as/v1/nodegroups/g', spec);
  t.is(replaced.status, 200, replaced.text);
  for (const url of ['http://169.254.169.254/latest/meta-data', 'http://[fe80::1]/x', 'http://metadata.google.internal/x', 'http://[::ffff:169.254.169.254]/']) {
    const r = await svc.send('POST', '/as/v1/nodegroups', staticGroup({ name: 'bad', admission: { webhook: { url, secret: secret() } } }));
    t.is(r.status, 400, `${url}: ${r.text}`);
    t.true(
      (r.json as { errors: Array<{ path: string }> }).errors.some((e) => e.path.endsWith('admission.webhook.url')),
      `${url}: ${r.text}`,
    );
  }
  const allowed = await svc.send('POST', '/as/v1/nodegroups', staticGroup({ name: 'meta', admission: { webhook: { url: 'http://169.254.169.254/x', secret: secret(), allowLinkLocal: true } } }));
  t.is(allowed.status, 201, allowed.text);
});
