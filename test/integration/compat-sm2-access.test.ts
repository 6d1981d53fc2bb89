// Who may use SM2's lookups: without compat.red5sm2.anonymousLookups only token holders, as on
// our own paths; with it anyone, each client address held to limits.lookups.anonymous and the
// group's PENDING caps as a token subject is (docs/migrating-from-red5-sm2.md, docs/security.md).
import test from 'ava';
import { hash } from '../../src/auth/scrypt-task.js';
import { isProblem } from '../helpers/assert.js';
import { allInService } from '../helpers/fake-node.js';
import { request } from '../helpers/http.js';
import { ADMIN_PASSWORD, staticGroup, startTestService } from '../helpers/service.js';

/** The fake nodes beat when a test says so: none may go silent (FAULT) however slowly the test runs. */
/** Room for every lookup: a refusal here is a limit's, never a full node's. */
const ROOMY = ['origin', 'edge'].map((role) => ({ region: 'r1', role, min: 0, max: 4, limit: 1_000_000 }));

const NODES = [
  { id: 'o1', role: 'origin', region: 'r1' },
  { id: 'o2', role: 'origin', region: 'r1' },
  { id: 'e1', role: 'edge', region: 'r1' },
];
const appUser = { username: 'backend', role: 'app', passwordHash: hash('app-secret-password') };
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

test("with anonymous lookups off, SM2's lookups need a token as ours do; a token from PUT /auth/login serves", async (t) => {
  const svc = await startTestService({
    groups: [staticGroup({ name: 'default', regions: ['r1'], nodes: NODES, rules: ROOMY })],
    config: { auth: { users: [appUser] }, compat: { red5sm2: { enabled: true } } },
  });
  t.teardown(() => svc.close());
  await allInService(
    svc,
    'default',
    NODES.map((n) => n.id),
  );
  for (const path of [
    '/as/v1/streams/stream/default/publish/live/cam1',
    '/as/v1/streams/stream/default/subscribe/live/cam1',
    '/as/v1/streams/stream/default',
    '/as/v1/streams/stream/node-groups',
    '/as/v1/streams/stream/default/stream/live/cam1',
  ]) {
    isProblem(t, await request(svc.url, 'GET', path), 401, 'UNAUTHORIZED');
    isProblem(t, await request(svc.url, 'GET', path, undefined, { authorization: 'Bearer not.a.token' }), 401, 'UNAUTHORIZED');
  }
  const login = await request(svc.url, 'PUT', '/as/v1/auth/login', undefined, { authorization: basic('backend', 'app-secret-password') });
  const token = (login.json as { token: string }).token;
  const pub = await request(svc.url, 'GET', '/as/v1/streams/stream/default/publish/live/cam1', undefined, { authorization: `Bearer ${token}` });
  t.is(pub.status, 200, pub.text);
  isProblem(
    t,
    await request(svc.url, 'GET', '/as/v1/streams/stream/default/publish/live/cam1', undefined, { authorization: `Bearer ${svc.signer.nodeToken('default', 'o1', 60_000)}` }),
    403,
    'FORBIDDEN',
  );
  // The document says so: the lookups ask for a token.
  const doc = (await svc.get('/as/v1/openapi.json', null)).json as { paths: Record<string, { get: { security: unknown[] } }> };
  t.deepEqual(doc.paths['/as/v1/streams/stream/{nodeGroup}/publish/{scope}/{name}']!.get.security, [{ bearer: [] }]);
});

test('anonymous lookups are rated per client address (an IPv6 /64), not per service; a token keeps its own bucket', async (t) => {
  // The front end's clock stands still: no bucket refills during the test, whatever the machine's pace.
  const now = Date.now();
  const svc = await startTestService({
    now: () => now,
    groups: [staticGroup({ name: 'default', regions: ['r1'], nodes: NODES, rules: ROOMY })],
    config: {
      auth: { users: [appUser] },
      server: { host: '127.0.0.1', port: 0, trustProxy: 1 },
      limits: { lookups: { anonymous: { perSecond: 1, burst: 3 } } },
      compat: { red5sm2: { enabled: true, anonymousLookups: true } },
    },
  });
  t.teardown(() => svc.close());
  await allInService(
    svc,
    'default',
    NODES.map((n) => n.id),
  );
  const from = (address: string, path: string, headers: Record<string, string> = {}) => request(svc.url, 'GET', path, undefined, { 'x-forwarded-for': address, ...headers });

  // Three in the bucket, none refilled: the fourth from one address is refused, with the wait.
  const statuses: number[] = [];
  for (let i = 0; i < 4; i++) statuses.push((await from('203.0.113.5', '/as/v1/streams/stream/default/subscribe/live/nobody')).status);
  t.deepEqual(statuses, [404, 404, 404, 429], 'the burst gets through (to a 404: no such stream), then no more');
  const limited = await from('203.0.113.5', '/as/v1/streams/stream/default/publish/live/cam1');
  t.regex(isProblem(t, limited, 429, 'RATE_LIMITED').detail, /limits\.lookups\.anonymous/);
  t.is(limited.headers.get('retry-after'), '1');
  // Another address has a bucket of its own; so has a token, from the same address.
  t.is((await from('203.0.113.6', '/as/v1/streams/stream/node-groups')).status, 200);
  const token = ((await request(svc.url, 'PUT', '/as/v1/auth/login', undefined, { authorization: basic('backend', 'app-secret-password') })).json as { token: string }).token;
  for (let i = 0; i < 5; i++) t.is((await from('203.0.113.5', '/as/v1/streams/stream/node-groups', { authorization: `Bearer ${token}` })).status, 200);
  // A token that does not verify is set aside: the address's bucket, not a 401.
  t.is((await from('203.0.113.7', '/as/v1/streams/stream/node-groups', { authorization: 'Bearer expired.or.forged' })).status, 200);
  // Addresses of one IPv6 /64 share a bucket; the next /64 does not.
  const v6: number[] = [];
  for (const host of ['2001:db8:1:2::1', '2001:db8:1:2:0:0:0:2', '2001:db8:1:2:ffff::3', '2001:DB8:1:2::4']) v6.push((await from(host, '/as/v1/streams/stream/node-groups')).status);
  t.deepEqual(v6, [200, 200, 200, 429], 'four from one /64: a burst of three');
  t.is((await from('2001:db8:1:3::1', '/as/v1/streams/stream/node-groups')).status, 200);
});

test("an address may hold the group's pendingPerToken streams looked up and not yet published, as a token may", async (t) => {
  const group = { ...staticGroup({ name: 'default', regions: ['r1'], nodes: NODES, rules: ROOMY }), limits: { pendingPerToken: 2, pendingBindings: 1000 } };
  const svc = await startTestService({
    groups: [group],
    config: { server: { host: '127.0.0.1', port: 0, trustProxy: 1 }, compat: { red5sm2: { enabled: true, anonymousLookups: true } } },
  });
  t.teardown(() => svc.close());
  const nodes = await allInService(
    svc,
    'default',
    NODES.map((n) => n.id),
  );
  const from = (address: string, path: string) => request(svc.url, 'GET', path, undefined, { 'x-forwarded-for': address });
  const publish = (address: string, name: string) => from(address, `/as/v1/streams/stream/default/publish/live/${name}`);
  t.is((await publish('198.51.100.1', 'p0')).status, 200);
  t.is((await publish('198.51.100.1', 'p1')).status, 200);
  t.regex(isProblem(t, await publish('198.51.100.1', 'p2'), 429, 'RATE_LIMITED').detail, /limits\.pendingPerToken/);
  t.is((await publish('198.51.100.2', 'q0')).status, 200, 'another address');
  // Published, a stream frees its place.
  const p0 = ((await publish('198.51.100.1', 'p0')).json as Array<{ serverAddress: string }>)[0]!;
  await nodes.get(p0.serverAddress === '10.0.0.1' ? 'o1' : 'o2')!.beat({ publishers: 1, streams: [{ name: 'p0', publishing: true }] });
  t.is((await publish('198.51.100.1', 'p2')).status, 200);
  const bound = ((await svc.get('/as/v1/streams?nodeGroup=default')).json as Array<{ name: string }>).map((s) => s.name);
  t.true(bound.includes('p2') && !bound.includes('p3'));
});

test('a whole stream listing costs an anonymous client one lookup per thousand streams it walks', async (t) => {
  const now = Date.now();
  const group = { ...staticGroup({ name: 'default', regions: ['r1'], nodes: NODES, rules: ROOMY }), limits: { pendingPerToken: 10_000, pendingBindings: 10_000 } };
  const svc = await startTestService({
    now: () => now,
    groups: [group],
    config: { limits: { lookups: { admin: { perSecond: 0, burst: 1 }, anonymous: { perSecond: 1, burst: 3 } } }, compat: { red5sm2: { enabled: true, anonymousLookups: true } } },
  });
  t.teardown(() => svc.close());
  await allInService(
    svc,
    'default',
    NODES.map((n) => n.id),
  );
  // A small group: one lookup's price.
  t.is((await request(svc.url, 'GET', '/as/v1/streams/stream/default')).status, 200);
  // 2,000 streams bound: the listing walks two thousand, three lookups with the first.
  for (let i = 0; i < 2000; i += 200) {
    const batch = await Promise.all(Array.from({ length: 200 }, (_, j) => svc.get(`/as/v1/streams/live/s${i + j}/publish?nodeGroup=default`)));
    t.true(
      batch.every((r) => r.status === 200),
      batch.find((r) => r.status !== 200)?.text,
    );
  }
  t.regex(isProblem(t, await request(svc.url, 'GET', '/as/v1/streams/stream/default'), 429, 'RATE_LIMITED').detail, /limits\.lookups\.anonymous/);
  // A token's bucket pays for it as well, and has room.
  const token = ((await request(svc.url, 'PUT', '/as/v1/auth/login', undefined, { authorization: `Basic ${Buffer.from(`admin:${ADMIN_PASSWORD}`).toString('base64')}` })).json as { token: string })
    .token;
  t.is((await request(svc.url, 'GET', '/as/v1/streams/stream/default', undefined, { authorization: `Bearer ${token}` })).status, 200);
});
