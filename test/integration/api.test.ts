// Every endpoint over real HTTP: its success path and the errors of docs/api.md that apply.
import anyTest, { type TestFn } from 'ava';
import { allInService, FakeNode } from '../helpers/fake-node.js';
import { isProblem } from '../helpers/assert.js';
import { waitForEvents } from '../helpers/events.js';
import { body } from '../helpers/http.js';
import { staticGroup, startTestService, type TestService } from '../helpers/service.js';

const test = anyTest as TestFn<{ svc: TestService; nodes: Map<string, FakeNode> }>;

const IDS = ['o1', 'o2', 'o3', 'e1', 'e2', 'e3', 't1'];
const ladder = (stream: string) => ({
  streamName: stream,
  region: 'r1',
  streams: [
    { name: `${stream}_720`, level: 1, videoBR: 2_500_000, videoWidth: 1280, videoHeight: 720, videoFPS: 30, audioBR: 128_000 },
    { name: `${stream}_360`, level: 2, videoBR: 800_000, videoWidth: 640, videoHeight: 360, videoFPS: 30, audioBR: 64_000 },
  ],
});

test.before(async (t) => {
  const svc = await startTestService({
    groups: [
      staticGroup({ name: 'g' }),
      staticGroup({
        name: 'h',
        nodes: [
          { id: 'ho1', role: 'origin', region: 'r1' },
          { id: 'he1', role: 'edge', region: 'r1' },
        ],
      }),
      staticGroup({ name: 'full', nodes: [{ id: 'fo1', role: 'origin', region: 'r1' }], rules: [{ region: 'r1', role: 'origin', min: 0, max: 1, limit: 1 }] }),
    ],
    config: { defaultNodeGroup: 'g' },
  });
  const nodes = await allInService(svc, 'g', IDS);
  await allInService(svc, 'h', ['ho1', 'he1']);
  await new FakeNode(svc, 'full', 'fo1').beat({ publishers: 1 });
  t.context = { svc, nodes };
});

test.after.always(async (t) => {
  await t.context.svc?.close();
});

// ---- endpoint 1 ---------------------------------------------------------------------------------

test('login answers a bearer token with its lifetime in seconds', async (t) => {
  const { svc } = t.context;
  const r = await svc.send('POST', '/as/v1/auth/login', { username: 'admin', password: 'correct-horse-battery' }, null);
  t.is(r.status, 200);
  const b = body<{ accessToken: string; tokenType: string; expiresIn: number }>(r);
  t.is(b.tokenType, 'Bearer');
  t.is(b.expiresIn, 3600);
  t.regex(b.accessToken, /^[\w-]+\.[\w-]+\.[\w-]+$/);
  t.is((await svc.get('/as/v1/nodegroups', b.accessToken)).status, 200);
});

test('login refuses bad credentials, bad bodies and other media types', async (t) => {
  const { svc } = t.context;
  isProblem(t, await svc.send('POST', '/as/v1/auth/login', { username: 'admin', password: 'wrong-password-x' }, null), 401, 'INVALID_CREDENTIALS');
  isProblem(t, await svc.send('POST', '/as/v1/auth/login', { username: 'nobody-at-all', password: 'x' }, null), 401, 'INVALID_CREDENTIALS');
  const missing = isProblem(t, await svc.send('POST', '/as/v1/auth/login', { username: 'admin' }, null), 400, 'VALIDATION_FAILED');
  t.deepEqual(missing.errors, [{ path: 'body.password', message: 'is required' }]);
  isProblem(t, await svc.send('POST', '/as/v1/auth/login', '{"username":', null), 400, 'BAD_JSON');
  isProblem(t, await svc.send('POST', '/as/v1/auth/login', 'username=admin', null, { 'content-type': 'application/x-www-form-urlencoded' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
  isProblem(t, await svc.send('POST', '/as/v1/auth/login', { username: 'a', password: 'x'.repeat(70_000) }, null), 413, 'PAYLOAD_TOO_LARGE');
  isProblem(t, await svc.send('POST', '/as/v1/auth/login', '{"username":"a","password":"b","__proto__":{"admin":true}}', null), 400, 'BAD_JSON');
  isProblem(t, await svc.send('POST', '/as/v1/auth/login', '', null), 400, 'BAD_JSON');
});

// ---- endpoints 4 and 5 -------------------------------------------------------------------------

test('endpoint 4 gives the least-loaded origin with its publish listener, and the same one again', async (t) => {
  const { svc } = t.context;
  const r = await svc.get('/as/v1/streams/live/pub-a/publish');
  t.is(r.status, 200, r.text);
  const a = body(r);
  t.like(a, { scope: 'live', name: 'pub-a', role: 'origin', region: 'r1', port: 1935, protocol: 'rtmp' });
  t.regex(a.serverAddress as string, /^10\.0\.0\.\d+$/);
  const again = body(await svc.get('/as/v1/streams/live/pub-a/publish'));
  t.is(again.nodeId, a.nodeId, 'a publisher that reconnects lands where it was');
});

test("endpoint 5 gives an edge under the stream's origin, with its playback listener", async (t) => {
  const { svc } = t.context;
  const origin = body<{ nodeId: string }>(await svc.get('/as/v1/streams/live/sub-a/publish'));
  const r = await svc.get('/as/v1/streams/live/sub-a/subscribe');
  t.is(r.status, 200, r.text);
  const edge = body(r);
  t.like(edge, { name: 'sub-a', role: 'edge', region: 'r1', port: 443, protocol: 'wss' });
  const detail = body<{ nodeList: Array<{ id: string; parent: string | null }> }>(await svc.get('/as/v1/nodegroups/g?limit=100'));
  t.is(detail.nodeList.find((n) => n.id === edge.nodeId)?.parent, origin.nodeId);
});

test('endpoint 5 needs a published stream; bad names and unknown groups are refused', async (t) => {
  const { svc } = t.context;
  isProblem(t, await svc.get('/as/v1/streams/live/never-published/subscribe'), 404, 'STREAM_NOT_FOUND');
  const bad = isProblem(t, await svc.get('/as/v1/streams/live/bad%20name/publish'), 400, 'VALIDATION_FAILED');
  t.is(bad.errors?.[0]?.path, 'path.streamName');
  t.regex(bad.errors?.[0]?.message ?? '', /1–128 characters/);
  isProblem(t, await svc.get(`/as/v1/streams/live/${'x'.repeat(129)}/publish`), 400, 'VALIDATION_FAILED');
  isProblem(t, await svc.get('/as/v1/streams/live/cam/publish?nodeGroup=nope'), 404, 'NODE_GROUP_NOT_FOUND');
  isProblem(t, await svc.get('/as/v1/streams/live/cam/publish?nodeGroup=bad!name'), 400, 'VALIDATION_FAILED');
});

test('?region= puts regions first; an unknown region is a 400; strict does not fall back', async (t) => {
  const { svc } = t.context;
  t.like(body(await svc.get('/as/v1/streams/live/region-a/publish?region=r2')), { region: 'r2', nodeId: 'o3' });
  const bad = isProblem(t, await svc.get('/as/v1/streams/live/region-b/publish?region=mars'), 400, 'VALIDATION_FAILED');
  t.regex(bad.detail, /mars/);
  isProblem(t, await svc.get('/as/v1/streams/live/region-c/publish?region=r1&region=r2'), 400, 'VALIDATION_FAILED');
  isProblem(t, await svc.get('/as/v1/streams/live/region-d/publish?strict=maybe'), 400, 'VALIDATION_FAILED');
  isProblem(t, await svc.get('/as/v1/streams/live/region-e/publish?clientIp=not-an-ip'), 400, 'VALIDATION_FAILED');
});

test('no room anywhere is a 503 NO_CAPACITY with Retry-After, and a scale-out request', async (t) => {
  const { svc } = t.context;
  const r = await svc.get('/as/v1/streams/live/too-many/publish?nodeGroup=full');
  const p = isProblem(t, r, 503, 'NO_CAPACITY');
  t.truthy(r.headers.get('retry-after'));
  t.regex(p.detail, /no origin in service with room/);
  const events = await waitForEvents(svc.url, svc.adminToken, (seen) => seen.some((e) => e.type === 'scaling.request' && e.group === 'full'));
  t.like(
    events.find((e) => e.type === 'scaling.request'),
    { group: 'full', role: 'origin', region: 'r1' },
  );
});

// ---- endpoint 2 ---------------------------------------------------------------------------------

test('endpoint 2: transcode=false gives an origin, omitted gives an edge; neither carries port or protocol', async (t) => {
  const { svc } = t.context;
  const origin = await svc.get('/as/v1/streams/stream/g/two-a?transcode=false');
  t.is(origin.status, 200, origin.text);
  t.like(body(origin), { role: 'origin', name: 'two-a', scope: 'live' });
  t.false('port' in body(origin));
  const edge = body(await svc.get('/as/v1/streams/stream/g/two-a'));
  t.like(edge, { role: 'edge', name: 'two-a' });
  t.false('protocol' in edge);
  isProblem(t, await svc.get('/as/v1/streams/stream/nope/two-a'), 404, 'NODE_GROUP_NOT_FOUND');
  isProblem(t, await svc.get('/as/v1/streams/stream/g/two-a?transcode=yes'), 400, 'VALIDATION_FAILED');
});

test('endpoint 2: transcode=true needs a provision, then binds a transcoder and an origin; renditions resolve to edges', async (t) => {
  const { svc } = t.context;
  isProblem(t, await svc.get('/as/v1/streams/stream/g/abr?transcode=true'), 404, 'PROVISION_NOT_FOUND');
  t.is((await svc.send('POST', '/as/v1/provision/g', ladder('abr'))).status, 201);
  const tr = await svc.get('/as/v1/streams/stream/g/abr?transcode=true');
  t.is(tr.status, 200, tr.text);
  t.like(body(tr), { role: 'transcoder', nodeId: 't1', name: 'abr' });
  const streams = body<Array<{ name: string; origin: { nodeId: string }; transcoder?: { nodeId: string }; renditions?: string[] }>>(await svc.get('/as/v1/streams?nodeGroup=g&limit=1000'));
  const abr = streams.find((s) => s.name === 'abr')!;
  t.is(abr.transcoder?.nodeId, 't1');
  t.deepEqual(abr.renditions, ['abr_720', 'abr_360']);
  const sub = body(await svc.get('/as/v1/streams/live/abr_360/subscribe'));
  t.like(sub, { role: 'edge', name: 'abr_360' });
});

// ---- endpoint 3 and the added provision routes -------------------------------------------------

test('provisions: create, read, list, replace, delete', async (t) => {
  const { svc } = t.context;
  const created = await svc.send('POST', '/as/v1/provision/g', ladder('prov-a'));
  t.is(created.status, 201, created.text);
  t.is(created.headers.get('location'), '/as/v1/provision/g/prov-a');
  t.like(body(created), { nodeGroup: 'g', streamName: 'prov-a', region: 'r1' });
  t.regex(body(created).createdAt as string, /^\d{4}-\d\d-\d\dT/);
  t.like(body(await svc.get('/as/v1/provision/g/prov-a')), { streamName: 'prov-a' });
  const replaced = await svc.send('PUT', '/as/v1/provision/g/prov-a', { ...ladder('prov-a'), region: 'r2' });
  t.is(replaced.status, 200, replaced.text);
  t.is(body(replaced).region, 'r2');
  const list = body<Array<{ streamName: string }>>(await svc.get('/as/v1/provision/g'));
  t.true(list.some((p) => p.streamName === 'prov-a'));
  t.is((await svc.send('DELETE', '/as/v1/provision/g/prov-a', undefined)).status, 204);
  isProblem(t, await svc.get('/as/v1/provision/g/prov-a'), 404, 'PROVISION_NOT_FOUND');
  isProblem(t, await svc.send('DELETE', '/as/v1/provision/g/prov-a', undefined), 404, 'PROVISION_NOT_FOUND');
  isProblem(t, await svc.send('PUT', '/as/v1/provision/g/prov-a', ladder('prov-a')), 404, 'PROVISION_NOT_FOUND');
});

test('provisions: duplicates, foreign regions and malformed ladders are refused with every bad field named', async (t) => {
  const { svc } = t.context;
  t.is((await svc.send('POST', '/as/v1/provision/g', ladder('prov-b'))).status, 201);
  isProblem(t, await svc.send('POST', '/as/v1/provision/g', ladder('prov-b')), 409, 'PROVISION_EXISTS');
  const region = isProblem(t, await svc.send('POST', '/as/v1/provision/g', { ...ladder('prov-c'), region: 'r9' }), 400, 'VALIDATION_FAILED');
  t.is(region.errors?.[0]?.path, 'body.region');
  const dup = ladder('prov-d');
  dup.streams[1]!.name = dup.streams[0]!.name;
  dup.streams[1]!.level = 1;
  const p = isProblem(t, await svc.send('POST', '/as/v1/provision/g', dup), 400, 'VALIDATION_FAILED');
  t.deepEqual(
    p.errors?.map((e) => e.path),
    ['body.streams[1].name', 'body.streams[1].level'],
  );
  const tooMany = { ...ladder('prov-e'), streams: Array.from({ length: 17 }, (_, i) => ({ ...ladder('x').streams[0]!, name: `r${i}`, level: i })) };
  isProblem(t, await svc.send('POST', '/as/v1/provision/g', tooMany), 400, 'VALIDATION_FAILED');
  const ranges = ladder('prov-f') as unknown as { streams: Array<Record<string, unknown>> };
  ranges.streams[0]!.videoBR = -5;
  ranges.streams[0]!.videoFPS = 1.5;
  ranges.streams[1]!.extra = true;
  const r = isProblem(t, await svc.send('POST', '/as/v1/provision/g', ranges), 400, 'VALIDATION_FAILED');
  t.deepEqual(r.errors?.map((e) => e.path).sort(), ['body.streams[0].videoBR', 'body.streams[0].videoFPS', 'body.streams[1].extra']);
  const taken = isProblem(t, await svc.send('POST', '/as/v1/provision/g', { ...ladder('prov-g'), streams: ladder('prov-b').streams }), 400, 'VALIDATION_FAILED');
  t.regex(taken.detail, /already a rendition of stream 'prov-b'/);
  isProblem(t, await svc.send('PUT', '/as/v1/provision/g/prov-b', ladder('other')), 400, 'VALIDATION_FAILED');
  isProblem(t, await svc.send('POST', '/as/v1/provision/nope', ladder('prov-h')), 404, 'NODE_GROUP_NOT_FOUND');
  // Every bad field in one answer: the schema's, the group's region, and a bad path with them.
  const all = isProblem(t, await svc.send('POST', '/as/v1/provision/g', { streamName: 'bad name', region: 'mars', streams: [] }), 400, 'VALIDATION_FAILED');
  t.deepEqual(all.errors?.map((e) => e.path).sort(), ['body.region', 'body.streamName', 'body.streams']);
  const withPath = isProblem(t, await svc.send('POST', '/as/v1/provision/bad%20group', { streamName: 'bad name', region: 'r1', streams: [] }), 400, 'VALIDATION_FAILED');
  t.deepEqual(withPath.errors?.map((e) => e.path).sort(), ['body.streamName', 'body.streams', 'path.nodeGroup']);
  // A body that cannot be read leaves the path's errors to speak.
  const unreadable = isProblem(t, await svc.send('POST', '/as/v1/provision/bad%20group', '{not json', undefined, { 'content-type': 'application/json' }), 400, 'VALIDATION_FAILED');
  t.deepEqual(
    unreadable.errors?.map((e) => e.path),
    ['path.nodeGroup'],
  );
});

// ---- endpoint 6 ---------------------------------------------------------------------------------

test('endpoint 6 lists streams of every group, pages with Link, and filters by group', async (t) => {
  const { svc } = t.context;
  for (const s of ['list-1', 'list-2', 'list-3']) t.is((await svc.get(`/as/v1/streams/live/${s}/publish`)).status, 200);
  t.is((await svc.get('/as/v1/streams/live/list-h/publish?nodeGroup=h')).status, 200);
  const all: Array<{ nodeGroup: string; name: string; state: string }> = [];
  let path: string | null = '/as/v1/streams?limit=2';
  let pages = 0;
  while (path && pages < 100) {
    const r = await svc.get(path);
    t.is(r.status, 200);
    all.push(...body<typeof all>(r));
    const link = r.headers.get('link');
    path = link ? /<([^>]+)>; rel="next"/.exec(link)![1]! : null;
    pages++;
    t.true(path === null || body<unknown[]>(r).length === 2, 'a next link only after a full page');
  }
  t.true(all.length > 0 && pages === Math.ceil(all.length / 2), 'no empty last page');
  const keys = all.map((s) => `${s.nodeGroup}/${s.name}`);
  t.deepEqual(keys, [...keys].sort(), 'ordered by group, then stream');
  t.is(new Set(keys).size, keys.length, 'no stream twice across pages');
  t.true(keys.includes('g/list-2') && keys.includes('h/list-h'));
  t.true(all.every((s) => s.state === 'PENDING' || s.state === 'LIVE'));
  const onlyH = body<typeof all>(await svc.get('/as/v1/streams?nodeGroup=h'));
  t.true(onlyH.length > 0 && onlyH.every((s) => s.nodeGroup === 'h'));
  isProblem(t, await svc.get('/as/v1/streams?limit=0'), 400, 'VALIDATION_FAILED');
  isProblem(t, await svc.get('/as/v1/streams?limit=1001'), 400, 'VALIDATION_FAILED');
});

// ---- endpoints 7 and 8 --------------------------------------------------------------------------

test('endpoint 7 lists node groups with counts by role and state; endpoint 8 shows one with its nodes', async (t) => {
  const { svc } = t.context;
  const groups = body<Array<{ name: string; nodes: { total: number; byRole: Record<string, Record<string, number>> }; ready: boolean }>>(await svc.get('/as/v1/nodegroups'));
  t.deepEqual(
    groups.map((g) => g.name),
    ['full', 'g', 'h'],
  );
  const g = groups.find((x) => x.name === 'g')!;
  t.is(g.nodes.total, 7);
  t.is(g.nodes.byRole.origin?.INSERVICE, 3);
  t.true(g.ready);
  const detail = body<{ name: string; nodeList: Array<{ id: string; state: string; address: string; lastHeartbeat: string }>; scaling: unknown[]; config: { regions: unknown[] } }>(
    await svc.get('/as/v1/nodegroups/g'),
  );
  t.is(detail.name, 'g');
  t.deepEqual(
    detail.nodeList.map((n) => n.id),
    [...IDS].sort(),
  );
  t.true(detail.nodeList.every((n) => n.state === 'INSERVICE' && n.address.startsWith('10.0.0.') && n.lastHeartbeat !== null));
  t.is(detail.config.regions.length, 2);
  t.is(detail.scaling.length, 6);
  const page = await svc.get('/as/v1/nodegroups/g?limit=3');
  t.is(body<{ nodeList: unknown[] }>(page).nodeList.length, 3);
  t.regex(page.headers.get('link') ?? '', /after=e3/);
  // A page that holds exactly what is left has no next link (docs/api.md: only when more remain).
  const exact = await svc.get(`/as/v1/nodegroups/g?limit=${IDS.length}`);
  t.is(body<{ nodeList: unknown[] }>(exact).nodeList.length, IDS.length);
  t.is(exact.headers.get('link'), null);
  const twoOfThree = await svc.get('/as/v1/nodegroups?limit=2');
  t.regex(twoOfThree.headers.get('link') ?? '', /after=g/);
  const lastOne = await svc.get('/as/v1/nodegroups?limit=1&after=g');
  t.deepEqual(
    body<Array<{ name: string }>>(lastOne).map((x) => x.name),
    ['h'],
  );
  t.is(lastOne.headers.get('link'), null);
  isProblem(t, await svc.get('/as/v1/nodegroups/nope'), 404, 'NODE_GROUP_NOT_FOUND');
});

// ---- node agents --------------------------------------------------------------------------------

test("heartbeats: the reply names the parent; another node's token, unknown nodes and bad bodies are refused", async (t) => {
  const { svc, nodes } = t.context;
  const reply = await nodes.get('e1')!.beat();
  t.is(reply.heartbeatMs, 200);
  t.false(reply.drain);
  t.truthy(reply.parent && ['o1', 'o2'].includes(reply.parent.nodeId));
  t.is((await nodes.get('o1')!.beat()).parent, null);
  const o1 = nodes.get('o1')!;
  isProblem(t, await svc.send('POST', '/as/v1/nodes/o2/events', { ready: true, metrics: {} }, o1.token), 403, 'FORBIDDEN');
  const ghost = new FakeNode(svc, 'g', 'ghost');
  isProblem(t, await svc.send('POST', '/as/v1/nodes/ghost/events', { ready: true, metrics: {} }, ghost.token), 404, 'NODE_NOT_FOUND');
  isProblem(t, await svc.send('POST', '/as/v1/nodes/o1/events', { ready: 'yes', metrics: { 'cpu.load': 'high' } }, o1.token), 400, 'VALIDATION_FAILED');
  isProblem(t, await svc.send('POST', '/as/v1/nodes/o1/events', { ready: true, metrics: {} }), 403, 'FORBIDDEN');
  isProblem(t, await svc.get('/as/v1/streams/live/x/publish', o1.token), 403, 'FORBIDDEN');
});

test('an admin can issue a node token for a static node', async (t) => {
  const { svc } = t.context;
  const r = await svc.send('POST', '/as/v1/nodegroups/g/nodes/o3/token', undefined);
  t.is(r.status, 200, r.text);
  const token = body<{ accessToken: string }>(r).accessToken;
  t.is((await svc.send('POST', '/as/v1/nodes/o3/events', { ready: true, metrics: {} }, token)).status, 200);
  isProblem(t, await svc.send('POST', '/as/v1/nodegroups/g/nodes/zz/token', undefined), 404, 'NODE_NOT_FOUND');
});

// ---- the rest of the contract -------------------------------------------------------------------

test('no token, a bad token or a malformed header is a 401 with a Bearer challenge', async (t) => {
  const { svc } = t.context;
  const none = await svc.get('/as/v1/streams', null);
  isProblem(t, none, 401, 'UNAUTHORIZED');
  t.regex(none.headers.get('www-authenticate') ?? '', /^Bearer/);
  const bad = await svc.get('/as/v1/streams', 'not.a.token');
  isProblem(t, bad, 401, 'UNAUTHORIZED');
  t.regex(bad.headers.get('www-authenticate') ?? '', /invalid_token/);
  isProblem(t, await svc.get('/as/v1/streams', null, { authorization: 'Basic YWRtaW46YWRtaW4=' }), 401, 'UNAUTHORIZED');
});

test('unknown routes and methods are problems too; answers carry security headers and a request id', async (t) => {
  const { svc } = t.context;
  isProblem(t, await svc.get('/as/v1/nothing-here'), 404, 'NOT_FOUND');
  isProblem(t, await svc.get('/no-such-page'), 404, 'NOT_FOUND');
  const m = await svc.send('DELETE', '/as/v1/streams', undefined);
  isProblem(t, m, 405, 'METHOD_NOT_ALLOWED');
  t.regex(m.headers.get('allow') ?? '', /GET/);
  const r = await svc.get('/as/v1/healthz', null, { 'x-request-id': 'trace-123' });
  t.is(r.headers.get('x-request-id'), 'trace-123');
  t.is(r.headers.get('x-powered-by'), null);
  t.is(r.headers.get('x-content-type-options'), 'nosniff');
  t.is(r.headers.get('cache-control'), 'no-store');
  t.regex(r.headers.get('content-security-policy') ?? '', /default-src 'none'/);
  const generated = (await svc.get('/as/v1/healthz', null, { 'x-request-id': 'bad id with spaces' })).headers.get('x-request-id');
  t.regex(generated ?? '', /^[A-Za-z0-9_-]{8}-[0-9a-z]+$/, 'an id of our own replaces one that is not sane');
  t.not((await svc.get('/as/v1/healthz', null)).headers.get('x-request-id'), generated, 'and each request gets its own');
});

test('healthz, readyz, metrics and the OpenAPI document', async (t) => {
  const { svc } = t.context;
  t.deepEqual(body(await svc.get('/as/v1/healthz', null)), { status: 'ok' });
  t.like(body(await svc.get('/as/v1/readyz', null)), { status: 'ready', groups: { g: true, h: true, full: true } });
  await svc.get('/as/v1/streams/live/metrics-a/publish');
  const metrics = (await svc.get('/as/v1/metrics', null)).text;
  t.regex(metrics, /switchyard_lookup_duration_seconds_bucket\{[^}]*endpoint="live:publish"[^}]*result="OK"/);
  t.regex(metrics, /switchyard_nodes\{group="g",role="origin",region="r1",state="INSERVICE"\} 2/);
  t.regex(metrics, /switchyard_bindings\{group="g",state="PENDING"\}/);
  t.regex(metrics, /switchyard_actor_call_duration_seconds_count\{method="lookups"\}/);
  const doc = body<{ openapi: string; paths: Record<string, Record<string, unknown>> }>(await svc.get('/as/v1/openapi.json', null));
  t.is(doc.openapi, '3.1.0');
  for (const [path, method] of [
    ['/as/v1/auth/login', 'post'],
    ['/as/v1/streams/stream/{nodeGroup}/{streamName}', 'get'],
    ['/as/v1/provision/{nodeGroup}', 'post'],
    ['/as/v1/streams/live/{streamName}/publish', 'get'],
    ['/as/v1/streams/live/{streamName}/subscribe', 'get'],
    ['/as/v1/streams', 'get'],
    ['/as/v1/nodegroups', 'get'],
    ['/as/v1/nodegroups/{nodeGroupName}', 'get'],
  ]) {
    t.truthy(doc.paths[path!]?.[method!], `${method} ${path}`);
  }
  const provision = doc.paths['/as/v1/provision/{nodeGroup}']!.post as { requestBody: { content: { 'application/json': { schema: { properties: { streams: { maxItems: number } } } } } } };
  t.is(provision.requestBody.content['application/json'].schema.properties.streams.maxItems, 16);
});
