// Random requests at Red5 SM2's paths with the layer on (docs/migrating-from-red5-sm2.md): never a
// 5xx (but the documented 503s), never a hang, always problem+json for errors with `error` and
// `errorMessage`, whatever guid, query, credentials or body a client sends; the service answers
// afterwards. Groups its admin API creates run on a static platform here: nothing is spawned.
import test from 'ava';
import fc from 'fast-check';
import { hash } from '../../src/auth/scrypt-task.js';
import { allInService } from '../helpers/fake-node.js';
import { checkReply } from '../helpers/fuzz.js';
import { rawRequest, request, type RawRequest } from '../helpers/http.js';
import { ADMIN_PASSWORD, staticGroup, startTestService } from '../helpers/service.js';

/** The fake nodes beat when a test says so: none may go silent (FAULT) however slowly the test runs. */

const RUNS = Number(process.env.FUZZ_RUNS ?? 3000);

const segment = fc.oneof(
  fc.constantFrom(
    'live',
    'default',
    'cam1',
    'room1',
    'show',
    'show_1',
    'vod',
    '..',
    '.',
    '.x',
    '%2e%2e',
    '%00',
    '%',
    '%zz',
    '~',
    'a~b',
    'a'.repeat(200),
    '__proto__',
    'constructor',
    'node-groups',
    'status',
    'stream',
    'publish',
  ),
  fc.string({ unit: 'grapheme', maxLength: 12 }).map((s) => encodeURIComponent(s)),
  fc.stringMatching(/^[A-Za-z0-9._~-]{1,20}$/),
);
const guid = fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => s.join('/'));
const group = fc.oneof({ arbitrary: fc.constant('default'), weight: 3 }, segment);
const lookupGuid = fc.oneof({ arbitrary: fc.constantFrom('live/cam1', 'live/room1/cam1', 'live/show', 'live/show_1'), weight: 3 }, guid);
/** A method and a path, mostly ones that go together (so that requests reach the handlers), now and then any. */
const target = fc.oneof(
  fc.constantFrom<[string, string]>(
    ['PUT', '/as/v1/auth/login'],
    ['GET', '/as/v1/admin/healthz'],
    ['GET', '/as/v1/admin/nodegroup'],
    ['POST', '/as/v1/admin/nodegroup'],
    ['GET', '/as/v1/streams/stream/node-groups'],
  ),
  fc.tuple(group, fc.constantFrom('publish', 'subscribe', 'stream'), lookupGuid).map(([g, kind, id]): [string, string] => ['GET', `/as/v1/streams/stream/${g}/${kind}/${id}`]),
  group.map((g): [string, string] => ['GET', `/as/v1/streams/stream/${g}`]),
  fc.tuple(fc.constantFrom('GET', 'POST'), group).map(([m, g]): [string, string] => [m, `/as/v1/streams/provision/${g}`]),
  fc.tuple(fc.constantFrom('GET', 'DELETE'), group, lookupGuid).map(([m, g, id]): [string, string] => [m, `/as/v1/streams/provision/${g}/${id}`]),
  fc.tuple(fc.constantFrom('GET', 'DELETE'), group).map(([m, g]): [string, string] => [m, `/as/v1/admin/nodegroup/${g}`]),
  group.map((g): [string, string] => ['GET', `/as/v1/admin/nodegroup/status/${g}`]),
  group.map((g): [string, string] => ['GET', `/as/v1/admin/nodegroup/${g}/status`]),
);
const method = fc.oneof({ arbitrary: fc.constant(null), weight: 6 }, fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD'));
const query = fc
  .array(
    fc.tuple(
      fc.constantFrom('strict', 'endpoints', 'transcode', 'subgroup', 'region', 'distribute', 'stats', 'aggregate', 'metrics', 'restream', '__proto__'),
      fc.constantFrom('true', 'false', '', '0', '1', '2', '101', '-1', '1e400', 'r1', 'r1,r2', 'mars', '%zz'),
    ),
    { maxLength: 4 },
  )
  .map((pairs) => (pairs.length === 0 ? '' : `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}`));
/** Most requests without a query: most operations take none, and would only answer 400. */
const maybeQuery = fc.oneof({ arbitrary: fc.constant(''), weight: 2 }, query);

const variant = fc.record({
  streamGuid: fc.oneof(fc.constantFrom('live/show_1', 'live/show_2', 'live/room1/a_1', 'vod/x', 'live', 'live/a/b/c'), guid),
  abrLevel: fc.oneof(fc.integer({ min: -2, max: 300 }), fc.constantFrom('1', null, 1.5)),
  videoParams: fc.record(
    {
      videoWidth: fc.integer({ min: 0, max: 9000 }),
      videoHeight: fc.integer({ min: 0, max: 5000 }),
      videoBitRate: fc.oneof(fc.integer({ min: 0, max: 3e8 }), fc.constant(Number.POSITIVE_INFINITY)),
    },
    { requiredKeys: [] },
  ),
});
const provisions = fc.array(
  fc.record(
    {
      provisionGuid: fc.oneof(fc.constantFrom('live/show', 'live/room1/a', 'vod/show'), guid),
      streamGuid: guid,
      messageType: fc.constantFrom('ProvisionCommand', 'x'),
      credentials: fc.constantFrom(null, { username: 'u', password: 'p' }, 'x'),
      capabilities: fc.constantFrom(['TRANSCODE'], ['PUBLISH'], [1]),
      region: fc.constantFrom('r1', 'mars'),
      streams: fc.array(variant, { maxLength: 4 }),
    },
    { requiredKeys: ['streams'] },
  ),
  { maxLength: 3 },
);
const count = fc.oneof(fc.integer({ min: -1, max: 2000 }), fc.constantFrom('0', '1', '2', 'x', '1024', '99999', ''));
const nodeGroup = fc.record(
  {
    name: fc.oneof(fc.constantFrom('sm2-fuzz', 'default', '.x'), segment),
    cloudPlatform: fc.constantFrom('AWS', 'DOCKER'),
    roles: fc.dictionary(
      fc.constantFrom('origin', 'edge', 'relay', 'transcoder', 'mixer', '__proto__'),
      fc.record({ name: fc.constantFrom('origin', 'edge', 'relay', 'mixer'), parentRoleName: fc.constantFrom('origin', 'relay', 'edge') }, { requiredKeys: [] }),
      { maxKeys: 3 },
    ),
    groups: fc.dictionary(
      fc.constantFrom('r1', 'us-east-1', '..', '__proto__'),
      fc.record({
        rulesByRole: fc.dictionary(
          fc.constantFrom('origin', 'edge', 'mixer'),
          fc.record(
            {
              min: count,
              max: count,
              increment: count,
              outExpression: fc.constantFrom('avg(cpu.usage) > 55.0', 'avg(x) >> 2', 'process.exit()', ''),
              capacityLimitExpression: fc.constantFrom('0', '90.0', '-1', 'avg(memory.total) / 5', 'x('),
              capacityRankingExpression: fc.constantFrom('cpu.usage', '0', 'avg(cpu.usage)'),
            },
            { requiredKeys: ['min', 'max'] },
          ),
          { maxKeys: 2 },
        ),
      }),
      { maxKeys: 2 },
    ),
  },
  { requiredKeys: ['name', 'roles'] },
);
const validProvision = [{ provisionGuid: 'live/show', streams: [{ streamGuid: 'live/show_1', abrLevel: 1, videoParams: { videoWidth: 640, videoHeight: 360, videoBitRate: 800_000 } }] }];
const validGroup = { name: 'sm2-fuzz', roles: { origin: {} }, groups: { r1: { rulesByRole: { origin: { min: '0', max: '1' } } } } };
const body = fc.oneof(
  fc.constant(undefined),
  { arbitrary: fc.constantFrom(JSON.stringify(validProvision), JSON.stringify(validGroup)), weight: 3 },
  provisions.map((v) => JSON.stringify(v)),
  nodeGroup.map((v) => JSON.stringify(v)),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.constantFrom('{', '[', '', 'null', '[{"__proto__":{"x":1}}]', '{"constructor":{"prototype":{"x":1}}}', '\u0000'),
);

test("no request to SM2's paths gets a 5xx, a hang or a malformed error", async (t) => {
  t.timeout(60_000 + RUNS * 20);
  const svc = await startTestService({
    groups: [staticGroup({ name: 'default', regions: ['r1', 'r2'] })],
    config: {
      auth: { users: [{ username: 'app', role: 'app', passwordHash: hash('app-password-123') }], loginThrottle: { maxFailures: 1_000_000, maxAddressFailures: 1_000_000 } },
      limits: { lookups: { anonymous: { perSecond: 0, burst: 1 } } },
      compat: { red5sm2: { enabled: true, anonymousLookups: true, platform: { type: 'static', static: { nodes: [{ id: 'f1', role: 'origin', region: 'r1', address: '10.9.9.9' }] } } } },
    },
  });
  t.teardown(() => svc.close());
  const nodes = await allInService(svc, 'default', ['o1', 'o2', 'o3', 'e1', 'e2', 'e3', 't1']);
  const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  const authorization = fc.oneof(
    { arbitrary: fc.constant(`Bearer ${svc.adminToken}`), weight: 6 },
    { arbitrary: fc.constant(basic('admin', ADMIN_PASSWORD)), weight: 2 },
    fc.constantFrom(undefined, 'Bearer a.b.c', 'Bearer', basic('admin', ADMIN_PASSWORD), basic('app', 'app-password-123'), basic('admin', 'wrong'), 'Basic', 'Basic ====', `Basic ${'A'.repeat(5000)}`),
    fc.constant(`Bearer ${nodes.get('o1')!.token}`),
    fc.string({ maxLength: 40 }).map((s) => `Basic ${Buffer.from(s).toString('base64')}`),
  );
  const requests: fc.Arbitrary<RawRequest> = fc
    .record({
      method,
      target,
      query: maybeQuery,
      authorization,
      contentType: fc.oneof({ arbitrary: fc.constant('application/json'), weight: 4 }, fc.constantFrom(undefined, 'text/plain')),
      forwarded: fc.option(fc.constantFrom('8.8.8.8', '2001:db8::1', 'garbage'), { nil: undefined }),
      body,
    })
    .map((r) => ({
      method: r.method ?? r.target[0],
      path: r.target[1] + r.query,
      headers: {
        ...(r.authorization ? { authorization: r.authorization } : {}),
        ...(r.contentType ? { 'content-type': r.contentType } : {}),
        ...(r.forwarded ? { 'x-forwarded-for': r.forwarded } : {}),
      },
      ...(r.body !== undefined ? { body: r.body } : {}),
    }));
  // Requests that succeed, first: the handlers' whole way is fuzzed from there on (a group, a ladder, a stream bound).
  const json = { 'content-type': 'application/json', authorization: `Bearer ${svc.adminToken}` };
  const examples: Array<[RawRequest]> = [
    [{ method: 'POST', path: '/as/v1/streams/provision/default', headers: json, body: JSON.stringify(validProvision) }],
    [{ method: 'POST', path: '/as/v1/admin/nodegroup', headers: json, body: JSON.stringify(validGroup) }],
    [{ method: 'GET', path: '/as/v1/streams/stream/default/publish/live/cam1', headers: {} }],
  ];
  const seen = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(requests, async (req) => {
      const reply = await rawRequest(svc.url, req);
      seen.set(reply.status, (seen.get(reply.status) ?? 0) + 1);
      const problem = checkReply(req, reply);
      if (problem) throw new Error(problem);
    }),
    { numRuns: RUNS, examples },
  );
  t.log(
    [...seen]
      .sort(([a], [b]) => a - b)
      .map(([s, n]) => `${s}: ${n}`)
      .join(', '),
  );
  t.true(
    [200, 201, 400, 401, 404].every((s) => seen.has(s)),
    'requests reached past validation',
  );
  t.is((await request(svc.url, 'GET', '/as/v1/admin/healthz')).status, 200, 'still answering');
  t.is((await svc.get('/as/v1/streams')).status, 200);
});
