// The node channel: heartbeats over one WebSocket per node, against a real service over real
// sockets. Its refusals are the POST's problems; each event gets its answer, in order.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import anyTest, { type TestFn } from 'ava';
import { ChannelHeartbeats, PostHeartbeats } from '../../src/agent/heartbeats.js';
import { isProblem } from '../helpers/assert.js';
import { openChannel, refusedUpgrade } from '../helpers/channel.js';
import { body, rawRequest } from '../helpers/http.js';
import { staticGroup, startTestService, type TestService } from '../helpers/service.js';

const test = anyTest as TestFn<{ svc: TestService }>;

test.before(async (t) => {
  t.context.svc = await startTestService({ groups: [staticGroup()] });
});

test.after.always(async (t) => {
  await t.context.svc?.close();
});

const event = (extra: Record<string, unknown> = {}) => ({ ready: true, metrics: { 'connections.subscriber': 0 }, ...extra });
const path = (id: string) => `/as/v1/nodes/${id}/events`;
/** A node token of the default life (24 h): not renewed in answers. */
const tokenOf = (svc: TestService, id: string) => svc.signer.nodeToken('g', id, 86_400_000);
/** Requests to no route so far: an upgrade where the channel is not offered is one. */
const unmatched = async (svc: TestService) => Number((await svc.get('/as/v1/metrics')).text.match(/^switchyard_http_requests_total\{method="GET",route="unmatched",status="404"\} (\d+)$/m)?.[1] ?? 0);

test("heartbeats over a channel bring nodes into service; each answer is the node's orders", async (t) => {
  const { svc } = t.context;
  const o1 = await openChannel(svc.url, 'o1', tokenOf(svc, 'o1'));
  t.teardown(() => o1.ws.terminate());
  o1.send(event());
  const first = await o1.next();
  t.like(first, { heartbeatMs: 200, parent: null, drain: false });
  const e1 = await openChannel(svc.url, 'e1', tokenOf(svc, 'e1'));
  t.teardown(() => e1.ws.terminate());
  e1.send(event());
  const parent = (await e1.next()).parent as { nodeId: string };
  t.true(['o1', 'o2'].includes(parent.nodeId), 'an origin in service in its region');
  const nodes = body<{ nodeList: Array<{ id: string; state: string }> }>(await svc.get('/as/v1/nodegroups/g')).nodeList;
  t.is(nodes.find((n) => n.id === 'o1')?.state, 'INSERVICE');
  t.is(nodes.find((n) => n.id === 'e1')?.state, 'INSERVICE');
  // Several events at once are answered one by one, in order.
  for (let i = 0; i < 40; i++) o1.send(i % 2 === 0 ? event() : 'not json');
  for (let i = 0; i < 40; i++) {
    const m = await o1.next();
    if (i % 2 === 0) t.is(m.heartbeatMs, 200);
    else t.is(m.code, 'BAD_JSON');
  }
  const metrics = (await svc.get('/as/v1/metrics')).text;
  t.regex(metrics, /^switchyard_node_channels [1-9][0-9]*$/m);
  t.regex(metrics, /^switchyard_node_channel_messages_total\{result="ok"\} [1-9]/m);
});

test('a refused event gets a problem and the channel goes on', async (t) => {
  const { svc } = t.context;
  const ch = await openChannel(svc.url, 'o2', tokenOf(svc, 'o2'));
  t.teardown(() => ch.ws.terminate());
  ch.send('{"ready": tru');
  t.like(await ch.next(), { status: 400, code: 'BAD_JSON', type: 'about:blank' });
  ch.send({ ready: 'yes', metrics: { 'cpu.load': 'high' } });
  const invalid = await ch.next();
  t.like(invalid, { status: 400, code: 'VALIDATION_FAILED' });
  t.deepEqual((invalid.errors as Array<{ path: string }>).map((e) => e.path).sort(), ['message.metrics.cpu.load', 'message.ready']);
  ch.send('{"__proto__": {"ready": true}, "ready": true, "metrics": {}}');
  t.like(await ch.next(), { code: 'BAD_JSON' });
  ch.send(Buffer.from([1, 2, 3]));
  t.like(await ch.next(), { status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' });
  ch.send(event());
  t.like(await ch.next(), { heartbeatMs: 200 });
});

test("the upgrade is refused with the POST's problems", async (t) => {
  const { svc } = t.context;
  const o1 = tokenOf(svc, 'o1');
  isProblem(t, await refusedUpgrade(svc.url, path('o1')), 401, 'UNAUTHORIZED');
  isProblem(t, await refusedUpgrade(svc.url, path('o1'), { authorization: 'Bearer nope' }), 401, 'UNAUTHORIZED');
  isProblem(t, await refusedUpgrade(svc.url, path('o2'), { authorization: `Bearer ${o1}` }), 403, 'FORBIDDEN');
  isProblem(t, await refusedUpgrade(svc.url, path('o1'), { authorization: `Bearer ${svc.adminToken}` }), 403, 'FORBIDDEN');
  isProblem(t, await refusedUpgrade(svc.url, path('o1'), { authorization: `Bearer ${svc.signer.nodeToken('gone', 'o1', 86_400_000)}` }), 404, 'NODE_NOT_FOUND');
  isProblem(t, await refusedUpgrade(svc.url, path('bad%20id'), { authorization: `Bearer ${o1}` }), 400, 'VALIDATION_FAILED');
  isProblem(t, await refusedUpgrade(svc.url, path('o1'), { authorization: `Bearer ${o1}`, 'sec-websocket-key': 'short' }), 400, 'BAD_REQUEST');
  isProblem(t, await refusedUpgrade(svc.url, path('o1'), { authorization: `Bearer ${o1}`, 'sec-websocket-protocol': 'a,,b' }), 400, 'BAD_REQUEST');
  isProblem(t, await refusedUpgrade(svc.url, path('o1'), { authorization: `Bearer ${o1}`, 'sec-websocket-protocol': 'a, a' }), 400, 'BAD_REQUEST');
  const version = await refusedUpgrade(svc.url, path('o1'), { authorization: `Bearer ${o1}`, 'sec-websocket-version': '7' });
  isProblem(t, version, 426, 'UPGRADE_REQUIRED');
  t.is(version.headers.get('sec-websocket-version'), '13');
  const plain = await svc.get(path('o1'), o1);
  isProblem(t, plain, 426, 'UPGRADE_REQUIRED');
  t.is(plain.headers.get('upgrade'), 'websocket');
  // Other routes answer an upgrade request as usual, then close the connection.
  const other = await refusedUpgrade(svc.url, '/as/v1/healthz');
  t.is(other.status, 200);
  t.is(other.headers.get('connection'), 'close');
  t.is(other.headers.get('x-content-type-options'), 'nosniff');
  isProblem(t, await refusedUpgrade(svc.url, '/as/v1/nowhere'), 404, 'NOT_FOUND');
  // The server still answers.
  t.is((await svc.get('/as/v1/healthz', null)).status, 200);
});

test('a node the group does not know is told so, and its channel closes with 1008', async (t) => {
  const { svc } = t.context;
  const ch = await openChannel(svc.url, 'ghost', tokenOf(svc, 'ghost'));
  t.teardown(() => ch.ws.terminate());
  ch.send(event());
  t.like(await ch.next(), { status: 404, code: 'NODE_NOT_FOUND' });
  t.deepEqual(await ch.closed, { code: 1008, reason: 'NODE_NOT_FOUND' });
});

test('a token renewed in an answer renews the channel: it is sent once, not with every answer', async (t) => {
  const { svc } = t.context;
  // An hour left of a day's token: past half its life.
  const ch = await openChannel(svc.url, 'o3', svc.signer.nodeToken('g', 'o3', 3_600_000));
  t.teardown(() => ch.ws.terminate());
  ch.send(event());
  const first = await ch.next();
  t.is(typeof first.token, 'string');
  t.is((await svc.send('POST', path('o3'), event(), first.token as string)).status, 200, 'the renewed token is a working one');
  ch.send(event());
  t.is((await ch.next()).token, undefined);
});

test('a channel whose token expires is told TOKEN_EXPIRED and closed', async (t) => {
  // The service's clock is the test's: the token expires when the test says, not after a sleep.
  let clock = Date.now();
  const svc = await startTestService({ groups: [staticGroup()], now: () => clock });
  t.teardown(() => svc.close());
  const token = svc.signer.nodeToken('g', 't1', 60_000);
  const exp = (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { exp: number }).exp * 1000;
  const ch = await openChannel(svc.url, 't1', token);
  t.teardown(() => ch.ws.terminate());
  // (No event before: its answer would renew the token, and the channel with it.)
  clock = exp;
  ch.send(event());
  t.like(await ch.next(), { status: 401, code: 'TOKEN_EXPIRED' });
  t.deepEqual(await ch.closed, { code: 1008, reason: 'TOKEN_EXPIRED' });
});

test('a stopping service closes its channels with 1001 and exits', async (t) => {
  const svc = await startTestService({ groups: [staticGroup()] });
  const ch = await openChannel(svc.url, 'o1', tokenOf(svc, 'o1'));
  ch.send(event());
  t.like(await ch.next(), { heartbeatMs: 200 });
  await svc.close();
  t.deepEqual(await ch.closed, { code: 1001, reason: 'STOPPING' });
});

test('a quiet channel is closed after server.channelIdleTimeout with 1000 IDLE', async (t) => {
  const svc = await startTestService({ groups: [staticGroup()], config: { server: { host: '127.0.0.1', port: 0, channelIdleTimeout: '1s' } } });
  t.teardown(() => svc.close());
  const ch = await openChannel(svc.url, 'o1', tokenOf(svc, 'o1'));
  ch.send(event());
  t.like(await ch.next(), { heartbeatMs: 200 });
  t.deepEqual(await ch.closed, { code: 1000, reason: 'IDLE' });
});

test('a flood of messages is read sixteen at a time and answered in order; the service goes on', async (t) => {
  // A service of its own: the backlog it reports is its channels' alone.
  const svc = await startTestService({ groups: [staticGroup()] });
  t.teardown(() => svc.close());
  const ch = await openChannel(svc.url, 'o2', tokenOf(svc, 'o2'));
  t.teardown(() => ch.ws.close());
  // Thousands of frames in a few socket reads: by default ws would emit them all at once.
  for (let i = 0; i < 3000; i++) ch.ws.send('x');
  ch.send(event());
  for (let i = 0; i < 3000; i++) t.like(await ch.next(), { code: 'BAD_JSON' });
  t.like(await ch.next(), { heartbeatMs: 200 });
  const metrics = (await svc.get('/as/v1/metrics')).text;
  const backlog = Number(/^switchyard_node_channel_backlog_max (\d+)$/m.exec(metrics)?.[1]);
  t.true(backlog >= 1 && backlog <= 16, `at most 16 read ahead of the answers (was ${backlog})`);
  t.is((await svc.get('/as/v1/healthz', null)).status, 200);
});

test('a node has one channel: a second replaces the first, which is told so', async (t) => {
  // A service of its own: the other tests' channels for the same nodes would be replaced.
  const svc = await startTestService({ groups: [staticGroup()] });
  t.teardown(() => svc.close());
  const first = await openChannel(svc.url, 'e1', tokenOf(svc, 'e1'));
  const second = await openChannel(svc.url, 'e1', tokenOf(svc, 'e1'));
  t.teardown(() => second.ws.close());
  t.deepEqual(await first.closed, { code: 1008, reason: 'REPLACED' });
  second.send(event());
  t.like(await second.next(), { heartbeatMs: 200 });
});

test("an opening handshake that is not a GET gets a problem, not the library's HTML", async (t) => {
  const { svc } = t.context;
  const r = await rawRequest(svc.url, {
    method: 'HEAD',
    path: path('o1'),
    headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-version': '13', authorization: `Bearer ${tokenOf(svc, 'o1')}` },
  });
  t.is(r.status, 405);
  t.regex(String(r.headers['content-type']), /^application\/problem\+json/);
});

// ---- the agent's side ---------------------------------------------------------------------------

test("the agent sends over the channel, and takes a refusal of its node as the POST's", async (t) => {
  const { svc } = t.context;
  const beats = new ChannelHeartbeats(svc.url, 'e2', new PostHeartbeats(svc.url, 'e2'));
  t.teardown(() => beats.close());
  const ok = await beats.send(event(), tokenOf(svc, 'e2'), 5000);
  t.true(ok.ok);
  t.is(beats.name, 'channel');
  const other = new ChannelHeartbeats(svc.url, 'e3', new PostHeartbeats(svc.url, 'e3'));
  const refused = await other.send(event(), tokenOf(svc, 'e2'), 5000);
  t.like(refused, { ok: false, status: 403 });
  t.is(other.name, 'post', 'no channel was opened');
});

// Serial: it counts the service's unmatched requests, which other tests here make too.
test.serial('where the control plane does not offer the channel, the agent POSTs, and tries the channel again later', async (t) => {
  const { svc } = t.context;
  let now = 0;
  // The channel is asked for where no route answers (as an older control plane would).
  const beats = new ChannelHeartbeats(`${svc.url}/older`, 't1', new PostHeartbeats(svc.url, 't1'), () => now);
  t.teardown(() => beats.close());
  const token = tokenOf(svc, 't1');
  const first = await beats.send(event(), token, 5000);
  t.true(first.ok, 'delivered by POST');
  t.is(beats.name, 'post');
  const before = await unmatched(svc);
  t.true((await beats.send(event(), token, 5000)).ok);
  t.is(await unmatched(svc), before, 'no second upgrade attempt within the minute');
  now += 61_000;
  t.true((await beats.send(event(), token, 5000)).ok);
  t.is(await unmatched(svc), before + 1, 'the channel is asked for again after a minute');
});

test('a control plane that answers the upgrade with a 5xx (one stopping) gets a failed heartbeat, not a minute of POSTs', async (t) => {
  // A stand-in for a control plane in the middle of stopping: its upgrades get 503 NOT_READY.
  let upgrades = 0;
  let posts = 0;
  const server = createServer((req, res) => {
    posts++;
    req.resume();
    res.writeHead(503, { 'content-type': 'application/problem+json' }).end('{"status":503,"code":"NOT_READY"}');
  });
  server.on('upgrade', (_req, socket) => {
    upgrades++;
    const problem = '{"type":"about:blank","title":"Service Unavailable","status":503,"code":"NOT_READY","detail":"stopping"}';
    socket.end(`HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/problem+json\r\ncontent-length: ${problem.length}\r\nconnection: close\r\n\r\n${problem}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const beats = new ChannelHeartbeats(url, 'n1', new PostHeartbeats(url, 'n1'), () => 0);
  t.teardown(() => beats.close());
  const outcome = await beats.send(event(), 'token', 5000);
  t.like(outcome, { ok: false, status: 503 });
  t.regex(outcome.ok ? '' : outcome.body, /NOT_READY/);
  t.is(posts, 0, 'not delivered by POST instead');
  await beats.send(event(), 'token', 5000);
  t.is(upgrades, 2, 'the channel is asked for again at the next event, at the same clock');
  t.is(posts, 0);
});
