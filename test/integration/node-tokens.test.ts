// Node tokens (security audit of 2026-11): an admin can revoke a node's tokens, which closes its
// channel and refuses its heartbeats, cached verifications included; a destroyed node's tokens
// are revoked with it; their lifetime is auth.nodeTokenTtl.
import { rmSync } from 'node:fs';
import test from 'ava';
import { isProblem } from '../helpers/assert.js';
import { openChannel } from '../helpers/channel.js';
import { waitForEvents } from '../helpers/events.js';
import { staticGroup, startTestService, tempDir } from '../helpers/service.js';

const beat = { ready: true, metrics: { 'connections.publisher': 0 } };
const tokenOf = (r: { json: unknown }) => (r.json as { accessToken: string }).accessToken;

test('a revoked node token is refused at once, over POST and on an open channel; a token issued afterwards works', async (t) => {
  const svc = await startTestService({ groups: [staticGroup({ name: 'g', regions: ['r1'], nodes: [{ id: 'o1', role: 'origin', region: 'r1' }] })] });
  t.teardown(() => svc.close());
  const issued = await svc.send('POST', '/as/v1/nodegroups/g/nodes/o1/token', undefined);
  const old = tokenOf(issued);
  t.is((await svc.send('POST', '/as/v1/nodes/o1/events', beat, old)).status, 200, 'works, and its verification is cached');
  const channel = await openChannel(svc.url, 'o1', old);
  channel.send(beat);
  t.is((await channel.next()).heartbeatMs, 200);

  const revoked = await svc.send('POST', '/as/v1/nodegroups/g/nodes/o1/token/revoke', undefined);
  t.is(revoked.status, 200, revoked.text);
  t.deepEqual(revoked.json, { nodeId: 'o1', generation: 1 });
  t.deepEqual(await channel.closed, { code: 1008, reason: 'REVOKED' });
  isProblem(t, await svc.send('POST', '/as/v1/nodes/o1/events', beat, old), 401, 'UNAUTHORIZED');
  await t.throwsAsync(openChannel(svc.url, 'o1', old), { message: /401/ });

  const fresh = tokenOf(await svc.send('POST', '/as/v1/nodegroups/g/nodes/o1/token', undefined));
  t.is((await svc.send('POST', '/as/v1/nodes/o1/events', beat, fresh)).status, 200);
  isProblem(t, await svc.send('POST', '/as/v1/nodegroups/g/nodes/o9/token/revoke', undefined), 404, 'NODE_NOT_FOUND');
  isProblem(t, await svc.send('POST', '/as/v1/nodegroups/g/nodes/o1/token/revoke', undefined, fresh), 403, 'FORBIDDEN');
});

test('revocations survive a restart', async (t) => {
  const dataDir = tempDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const first = await startTestService({ dataDir, groups: [staticGroup({ name: 'g', regions: ['r1'], nodes: [{ id: 'o1', role: 'origin', region: 'r1' }] })] });
  const old = tokenOf(await first.send('POST', '/as/v1/nodegroups/g/nodes/o1/token', undefined));
  t.is((await first.send('POST', '/as/v1/nodegroups/g/nodes/o1/token/revoke', undefined)).status, 200);
  await first.close({ stopNodes: false });
  const second = await startTestService({ dataDir, groups: [staticGroup({ name: 'g', regions: ['r1'], nodes: [{ id: 'o1', role: 'origin', region: 'r1' }] })] });
  t.teardown(() => second.close());
  isProblem(t, await second.send('POST', '/as/v1/nodes/o1/events', beat, old), 401, 'UNAUTHORIZED');
});

test("a destroyed node's tokens die with it: the same id in a group of the same name does not take them", async (t) => {
  const spec = staticGroup({ name: 'gone', regions: ['r1'], nodes: [{ id: 'o1', role: 'origin', region: 'r1' }] });
  const svc = await startTestService({ groups: [staticGroup({ name: 'g' })], config: { auth: { nodeTokenTtl: '2h' } } });
  t.teardown(() => svc.close());
  t.is((await svc.send('POST', '/as/v1/nodegroups', spec)).status, 201);
  // Static nodes are listed by the supervisor once the group's actor runs.
  await waitForEvents(svc.url, svc.adminToken, (seen) => seen.some((e) => e.type === 'node.state' && e.group === 'gone' && e.nodeId === 'o1'));
  const issued = await svc.send('POST', '/as/v1/nodegroups/gone/nodes/o1/token', undefined);
  t.is((issued.json as { expiresIn: number }).expiresIn, 7200, 'lifetime from auth.nodeTokenTtl');
  const leaked = tokenOf(issued);
  t.is((await svc.send('POST', '/as/v1/nodes/o1/events', beat, leaked)).status, 200);
  t.is((await svc.send('DELETE', '/as/v1/nodegroups/gone', undefined)).status, 202);
  await waitForEvents(svc.url, svc.adminToken, (seen) => seen.some((e) => e.type === 'nodegroup.changed' && e.group === 'gone' && e.change === 'deleted'));
  t.is((await svc.send('POST', '/as/v1/nodegroups', spec)).status, 201);
  await waitForEvents(svc.url, svc.adminToken, (seen) => seen.filter((e) => e.type === 'node.state' && e.group === 'gone' && e.nodeId === 'o1' && e.from === null).length === 2);
  isProblem(t, await svc.send('POST', '/as/v1/nodes/o1/events', beat, leaked), 401, 'UNAUTHORIZED');
});
