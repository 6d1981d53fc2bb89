// The node-group admin API over real HTTP (docs/api.md): create, replace, delete in the
// background, drain and doom; and what survives a restart.
import { rmSync } from 'node:fs';
import test from 'ava';
import { FakeNode } from '../helpers/fake-node.js';
import { isProblem } from '../helpers/assert.js';
import { waitForEvents } from '../helpers/events.js';
import { body } from '../helpers/http.js';
import { staticGroup, startTestService, tempDir } from '../helpers/service.js';

test('create, read, replace and delete a node group; a bad expression names its column', async (t) => {
  const svc = await startTestService();
  t.teardown(() => svc.close());
  const spec = staticGroup({ name: 'extra', nodes: [{ id: 'x1', role: 'origin', region: 'r1' }] });
  const bad = structuredClone(spec) as { rules: Array<Record<string, unknown>> };
  bad.rules[0]!.scaleOut = 'avg(connections.publisher) >> 2';
  const p = isProblem(t, await svc.send('POST', '/as/v1/nodegroups', bad), 400, 'VALIDATION_FAILED');
  t.deepEqual(p.errors, [{ path: 'body.rules[0].scaleOut', message: "operator '>>' is not allowed; use + - * /, comparisons, && || ! (at column 28)" }]);
  isProblem(t, await svc.send('POST', '/as/v1/nodegroups', { name: 'x' }), 400, 'VALIDATION_FAILED');

  const created = await svc.send('POST', '/as/v1/nodegroups', spec);
  t.is(created.status, 201, created.text);
  t.is(created.headers.get('location'), '/as/v1/nodegroups/extra');
  t.like(body(created), { name: 'extra', scope: 'live', timing: { heartbeatMs: 200 } });
  isProblem(t, await svc.send('POST', '/as/v1/nodegroups', spec), 409, 'NODE_GROUP_EXISTS');
  await waitForEvents(svc.url, svc.adminToken, (s) => s.some((e) => e.type === 'node.state' && e.nodeId === 'x1' && e.to === 'CREATED'));
  const x1 = new FakeNode(svc, 'extra', 'x1');
  await x1.beat();
  t.is((await svc.get('/as/v1/streams/live/cam/publish?nodeGroup=extra')).status, 200);

  const replaced = await svc.send('PUT', '/as/v1/nodegroups/extra', { ...spec, scope: 'vod' });
  t.is(replaced.status, 200, replaced.text);
  t.is(body(await svc.get('/as/v1/streams/live/cam/publish?nodeGroup=extra')).scope, 'vod');
  isProblem(t, await svc.send('PUT', '/as/v1/nodegroups/extra', { ...spec, name: 'other' }), 400, 'VALIDATION_FAILED');
  isProblem(t, await svc.send('PUT', '/as/v1/nodegroups/extra', { ...spec, platform: { type: 'local' } }), 409, 'NODE_GROUP_CONFLICT');
  isProblem(t, await svc.send('PUT', '/as/v1/nodegroups/nope', { ...spec, name: 'nope' }), 404, 'NODE_GROUP_NOT_FOUND');

  const deleted = await svc.send('DELETE', '/as/v1/nodegroups/extra', undefined);
  t.is(deleted.status, 202);
  t.deepEqual(body(deleted), { name: 'extra', status: 'deleting' });
  isProblem(t, await svc.get('/as/v1/streams/live/cam/publish?nodeGroup=extra'), 404, 'NODE_GROUP_NOT_FOUND');
  // The group goes once its node has drained: the node says it is empty.
  await waitForEvents(svc.url, svc.adminToken, (s) => s.some((e) => e.type === 'node.state' && e.nodeId === 'x1' && e.to === 'SOFT_SUNSET'));
  await x1.beat();
  await waitForEvents(svc.url, svc.adminToken, (s) => s.some((e) => e.type === 'nodegroup.changed' && e.group === 'extra' && e.change === 'deleted'));
  isProblem(t, await svc.get('/as/v1/nodegroups/extra'), 404, 'NODE_GROUP_NOT_FOUND');
  isProblem(t, await svc.send('DELETE', '/as/v1/nodegroups/extra', undefined), 404, 'NODE_GROUP_NOT_FOUND');
});

test('concurrent creates of one name: one is created, the others are told it exists', async (t) => {
  const svc = await startTestService();
  t.teardown(() => svc.close());
  const spec = staticGroup({ name: 'twin', nodes: [{ id: 't1', role: 'origin', region: 'r1' }] });
  const answers = await Promise.all(Array.from({ length: 4 }, () => svc.send('POST', '/as/v1/nodegroups', spec)));
  t.deepEqual(answers.map((r) => r.status).sort(), [201, 409, 409, 409]);
  const groups = body<Array<{ name: string }>>(await svc.get('/as/v1/nodegroups')).filter((g) => g.name === 'twin');
  t.is(groups.length, 1);
});

test('a node group is not listed until it is created: the stream list answers 200 while one starts', async (t) => {
  const svc = await startTestService();
  t.teardown(() => svc.close());
  let created = false;
  const creating = svc.send('POST', '/as/v1/nodegroups', staticGroup({ name: 'late' })).finally(() => (created = true));
  const statuses = new Map<number, number>();
  // Read the list (every group's streams) over and over while the new group's actor starts.
  for (let i = 0; i < 10_000 && !created; i++) {
    const r = await svc.get('/as/v1/streams');
    statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
  }
  t.is((await creating).status, 201);
  t.true((statuses.get(200) ?? 0) > 1, 'the list was read while the group was being created');
  t.deepEqual([...statuses.keys()], [200]);
  t.is((await svc.get('/as/v1/streams?nodeGroup=late')).status, 200);
});

test('drain takes a node out of rotation and retires it once empty; doom and bad states are answered', async (t) => {
  const svc = await startTestService({
    groups: [
      staticGroup({
        nodes: [
          { id: 'o1', role: 'origin', region: 'r1' },
          { id: 'o2', role: 'origin', region: 'r1' },
        ],
      }),
    ],
  });
  t.teardown(() => svc.close());
  const o1 = new FakeNode(svc, 'g', 'o1');
  const o2 = new FakeNode(svc, 'g', 'o2');
  // Static nodes are registered by the supervisor's first tick: a heartbeat before it is a 404.
  await waitForEvents(svc.url, svc.adminToken, (s) => ['o1', 'o2'].every((id) => s.some((e) => e.type === 'node.state' && e.nodeId === id && e.to === 'CREATED')));
  // Busy when drained: an empty draining node is retired at the supervisor's next tick, which could
  // come before the test's next heartbeat.
  await o1.beat({ publishers: 2 });
  await o2.beat({ publishers: 1 });
  const drained = await svc.send('POST', '/as/v1/nodegroups/g/nodes/o1/drain', undefined);
  t.is(drained.status, 202);
  t.deepEqual(body(drained), { nodeId: 'o1', state: 'SOFT_SUNSET' });
  t.true((await o1.beat({ publishers: 2 })).drain, 'the agent is told to drain');
  t.is(body(await svc.get('/as/v1/streams/live/after-drain/publish')).nodeId, 'o2', 'no new assignments to a draining node');
  await o1.beat({ publishers: 0 });
  await waitForEvents(svc.url, svc.adminToken, (s) => s.some((e) => e.type === 'node.state' && e.nodeId === 'o1' && e.to === null));
  isProblem(t, await svc.send('POST', '/as/v1/nodegroups/g/nodes/o1/drain', undefined), 404, 'NODE_NOT_FOUND');
  const doomed = await svc.send('POST', '/as/v1/nodegroups/g/nodes/o2/doom', undefined);
  t.deepEqual(body(doomed), { nodeId: 'o2', state: 'DOOMED' });
  isProblem(t, await svc.send('POST', '/as/v1/nodegroups/g/nodes/o2/drain', undefined), 409, 'NODE_STATE_CONFLICT');
});

test('groups created through the API survive a restart, and a config change does not undo an API change', async (t) => {
  const dataDir = tempDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const fileGroup = staticGroup({ name: 'filed' });
  let svc = await startTestService({ dataDir, groups: [fileGroup] });
  t.is((await svc.send('POST', '/as/v1/nodegroups', staticGroup({ name: 'made' }))).status, 201);
  t.is((await svc.send('PUT', '/as/v1/nodegroups/filed', { ...fileGroup, scope: 'changed-by-api' })).status, 200);
  await svc.close();
  svc = await startTestService({ dataDir, groups: [{ ...fileGroup, scope: 'changed-in-file' }] });
  t.teardown(() => svc.close());
  const groups = body<Array<{ name: string; scope: string }>>(await svc.get('/as/v1/nodegroups'));
  t.deepEqual(
    groups.map((g) => [g.name, g.scope]),
    [
      ['filed', 'changed-by-api'],
      ['made', 'live'],
    ],
  );
});
