// Names that could climb or hide in a path (`.`, `..`, `.x`) are refused wherever a request names a
// node group, a stream, a provision, a rendition or a node (the security audit of 2026-11).
import anyTest, { type TestFn } from 'ava';
import { isProblem } from '../helpers/assert.js';
import { rawRequest, replyOf, type Reply } from '../helpers/http.js';
import { staticGroup, startTestService, type TestService } from '../helpers/service.js';
import { ladder } from '../helpers/fixtures.js';

const test = anyTest as TestFn<{ svc: TestService }>;

const DOT_NAMES = ['.', '..', '.hidden', '.-x'];

test.before(async (t) => {
  t.context = { svc: await startTestService({ groups: [staticGroup({ name: 'g' })], config: { defaultNodeGroup: 'g' } }) };
});

test.after.always(async (t) => {
  await t.context.svc?.close();
});

/**
 * Sent as given: fetch (like any WHATWG URL parser) would resolve `.` and `..` segments, `%2e`
 * included, before the request left, and the server would never see them.
 */
async function raw(svc: TestService, method: string, path: string, body?: unknown, token = svc.adminToken): Promise<Reply> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const r = await rawRequest(svc.url, { method, path, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  return replyOf(r.status, new Headers(Object.entries(r.headers).flatMap(([k, v]) => (v === undefined ? [] : [[k, String(v)] as [string, string]]))), r.text);
}

test('node group, region and static node names that start with a dot are refused', async (t) => {
  const { svc } = t.context;
  for (const name of DOT_NAMES) {
    const group = isProblem(t, await svc.send('POST', '/as/v1/nodegroups', staticGroup({ name })), 400, 'VALIDATION_FAILED');
    t.true(
      group.errors!.some((e) => e.path === 'body.name' && /a dot only between two other characters/.test(e.message)),
      JSON.stringify(group.errors),
    );
    const node = isProblem(
      t,
      await svc.send('POST', '/as/v1/nodegroups', staticGroup({ name: `n${DOT_NAMES.indexOf(name)}`, regions: ['r1'], nodes: [{ id: name, role: 'origin', region: 'r1' }] })),
      400,
    );
    t.true(
      node.errors!.some((e) => e.path === 'body.platform.static.nodes[0].id'),
      JSON.stringify(node.errors),
    );
    const region = isProblem(t, await svc.send('POST', '/as/v1/nodegroups', { ...staticGroup({ name: 'r', regions: [name] }) }), 400);
    t.true(
      region.errors!.some((e) => e.path === 'body.regions[0].name'),
      JSON.stringify(region.errors),
    );
  }
  // Nothing was created along the way.
  const list = await svc.get('/as/v1/nodegroups');
  t.deepEqual(
    (list.json as Array<{ name: string }>).map((g) => g.name),
    ['g'],
  );
});

test('stream, provision and rendition names that start with a dot are refused', async (t) => {
  const { svc } = t.context;
  for (const name of DOT_NAMES) {
    isProblem(t, await raw(svc, 'GET', `/as/v1/streams/live/${name}/publish`), 400, 'VALIDATION_FAILED');
    isProblem(t, await raw(svc, 'GET', `/as/v1/streams/live/${name}/subscribe`), 400, 'VALIDATION_FAILED');
    isProblem(t, await raw(svc, 'GET', `/as/v1/streams/stream/g/${name}?transcode=false`), 400, 'VALIDATION_FAILED');
    isProblem(t, await raw(svc, 'GET', `/as/v1/provision/g/${name}`), 400, 'VALIDATION_FAILED');
    const created = isProblem(t, await svc.send('POST', '/as/v1/provision/g', ladder(name, { rendition: 'fine_360' })), 400, 'VALIDATION_FAILED');
    t.true(
      created.errors!.some((e) => e.path === 'body.streamName'),
      JSON.stringify(created.errors),
    );
    const rendition = isProblem(t, await svc.send('POST', '/as/v1/provision/g', ladder('fine', { rendition: name })), 400, 'VALIDATION_FAILED');
    t.true(
      rendition.errors!.some((e) => e.path === 'body.streams[0].name'),
      JSON.stringify(rendition.errors),
    );
  }
  t.deepEqual((await svc.get('/as/v1/provision/g')).json, []);
  // A dot inside a name is still a name.
  t.is((await svc.send('POST', '/as/v1/provision/g', ladder('cam.1'))).status, 201);
});

test('node ids that start with a dot are refused in node routes', async (t) => {
  const { svc } = t.context;
  for (const name of DOT_NAMES) {
    isProblem(t, await raw(svc, 'POST', `/as/v1/nodegroups/g/nodes/${name}/drain`), 400, 'VALIDATION_FAILED');
    isProblem(t, await raw(svc, 'POST', `/as/v1/nodegroups/g/nodes/${name}/token`), 400, 'VALIDATION_FAILED');
    const token = svc.signer.nodeToken('g', name, 60_000);
    isProblem(t, await raw(svc, 'POST', `/as/v1/nodes/${name}/events`, { ready: true, metrics: {} }, token), 400, 'VALIDATION_FAILED');
  }
});
