// Random requests against the live server: never a 5xx (but the documented 503s), never a hang,
// always problem+json for errors, and the server still answers afterwards; random WebSocket
// handshakes either open a node channel or get a problem. `npm run fuzz` runs
// the long form (FUZZ_RUNS, default 100k here).
import test from 'ava';
import fc from 'fast-check';
import { allInService } from '../helpers/fake-node.js';
import { checkReply, requestArb } from '../helpers/fuzz.js';
import { hash } from '../../src/auth/scrypt-task.js';
import { rawRequest, request } from '../helpers/http.js';
import { staticGroup, startTestService } from '../helpers/service.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 5000);

test('no request a client can send gets a 5xx, a hang or a non-problem error', async (t) => {
  t.timeout(60_000 + RUNS * 20);
  const started = Date.now();
  const roomy = staticGroup({ rules: ['r1', 'r2'].flatMap((region) => ['origin', 'edge', 'transcoder'].map((role) => ({ region, role, min: 0, max: 4, limit: 1_000_000 }))) });
  const svc = await startTestService({
    groups: [roomy],
    config: { auth: { users: [{ username: 'app', role: 'app', passwordHash: hash('app-password-123') }], loginThrottle: { maxFailures: 1_000_000 } } },
  });
  t.teardown(() => svc.close());
  const nodes = await allInService(svc, 'g', ['o1', 'o2', 'o3', 'e1', 'e2', 'e3', 't1']);
  const app = ((await request(svc.url, 'POST', '/as/v1/auth/login', { username: 'app', password: 'app-password-123' })).json as { accessToken: string }).accessToken;
  const tokens = [svc.adminToken, app, nodes.get('o1')!.token, nodes.get('e1')!.token];
  await fc.assert(
    fc.asyncProperty(requestArb(tokens), async (req) => {
      const reply = await rawRequest(svc.url, req);
      const problem = checkReply(req, reply);
      if (problem) throw new Error(problem);
    }),
    { numRuns: RUNS },
  );
  t.log(`${RUNS} requests in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  t.is((await request(svc.url, 'GET', '/as/v1/healthz')).status, 200, 'still answering');
  t.is((await svc.get('/as/v1/streams')).status, 200);
});

test('WebSocket handshakes with random headers open a node channel or get a problem, never a bare answer', async (t) => {
  const svc = await startTestService({ groups: [staticGroup()] });
  t.teardown(() => svc.close());
  const o1 = svc.signer.nodeToken('g', 'o1', 86_400_000);
  const header = fc.oneof(
    fc.constantFrom('', ' ', 'a', 'a,b', 'a, a', 'chat, superchat', '13', '8', '7', '0', 'x'.repeat(300)),
    fc.string({ maxLength: 40 }).map((s) => s.replace(/[^\x20-\x7e\t]/g, '?').trim()),
  );
  const key = fc.oneof(
    fc.constant('dGhlIHNhbXBsZSBub25jZQ=='),
    fc.uint8Array({ minLength: 0, maxLength: 20 }).map((b) => Buffer.from(b).toString('base64')),
    header,
  );
  const handshake = fc.record({
    // Weighted toward a whole handshake, so that some of them open a channel.
    nodeId: fc.oneof({ arbitrary: fc.constant('o1'), weight: 3 }, fc.constantFrom('o2', 'ghost', 'bad%20id')),
    token: fc.oneof({ arbitrary: fc.constant(o1), weight: 3 }, fc.constantFrom(svc.adminToken, 'nope', undefined)),
    key: fc.option(fc.oneof({ arbitrary: fc.constant('dGhlIHNhbXBsZSBub25jZQ=='), weight: 2 }, key), { nil: undefined, freq: 8 }),
    version: fc.option(fc.oneof({ arbitrary: fc.constant('13'), weight: 2 }, header), { nil: undefined, freq: 8 }),
    protocol: fc.option(header, { nil: undefined }),
    upgrade: fc.oneof({ arbitrary: fc.constant('websocket'), weight: 3 }, fc.constantFrom('WebSocket', 'h2c', '')),
  });
  let opened = 0;
  await fc.assert(
    fc.asyncProperty(handshake, async (h) => {
      const headers: Record<string, string> = { connection: 'Upgrade', upgrade: h.upgrade };
      if (h.token) headers.authorization = `Bearer ${h.token}`;
      if (h.key !== undefined) headers['sec-websocket-key'] = h.key;
      if (h.version !== undefined) headers['sec-websocket-version'] = h.version;
      if (h.protocol !== undefined) headers['sec-websocket-protocol'] = h.protocol;
      const req = { method: 'GET', path: `/as/v1/nodes/${h.nodeId}/events`, headers };
      const reply = await rawRequest(svc.url, req);
      if (reply.status === 101) return void opened++;
      const problem = checkReply(req, reply) ?? (reply.status < 400 ? `a ${reply.status} to a handshake` : null);
      if (problem) throw new Error(problem);
    }),
    { numRuns: 500 },
  );
  t.log(`${opened} of 500 handshakes opened a channel`);
  t.true(opened > 0, 'whole handshakes were among them');
  t.is((await request(svc.url, 'GET', '/as/v1/healthz')).status, 200, 'still answering');
});

test('an upgrade request that no route takes over gets its whole answer, however much body it still sends', async (t) => {
  // Found by the fuzz test above: the answer was written, then the connection closed with the
  // body unread, and the kernel's reset discarded the answer at the client ("aborted").
  const svc = await startTestService({ groups: [staticGroup()] });
  t.teardown(() => svc.close());
  for (const upgrade of ['websocket', 'h2c']) {
    for (const size of [0, 300_000]) {
      const reply = await rawRequest(svc.url, { method: 'GET', path: '/as/v1/openapi.json', headers: { connection: 'Upgrade', upgrade }, body: 'x'.repeat(size) });
      t.is(reply.status, 200, `${upgrade}, ${size} bytes of body`);
      t.truthy((JSON.parse(reply.text) as { paths?: object }).paths, `${upgrade}, ${size} bytes of body: the whole document`);
    }
  }
  t.is((await request(svc.url, 'GET', '/as/v1/healthz')).status, 200, 'still answering');
});
