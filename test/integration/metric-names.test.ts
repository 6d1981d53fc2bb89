// The admin API refuses a node group whose rules read a metric no node reports (400, naming the
// metrics that exist) and changes nothing; one the operator lists in metrics.custom is accepted.
import test from 'ava';
import { isProblem } from '../helpers/assert.js';
import { staticGroup, startTestService } from '../helpers/service.js';

test('POST and PUT /as/v1/nodegroups refuse unknown metric names with 400 and the list; metrics.custom lets one through', async (t) => {
  const svc = await startTestService({ config: { metrics: { custom: ['gpu.load'] } } });
  t.teardown(() => svc.close());
  const bad = staticGroup({ name: 'bad', rules: [{ region: 'r1', role: 'edge', min: 0, max: 2, limit: 'avg(memory.total) / 50000000', scaleOut: 'avg(conections.subscriber) > 10' }] });
  const p = isProblem(t, await svc.send('POST', '/as/v1/nodegroups', bad), 400, 'VALIDATION_FAILED');
  const byPath = Object.fromEntries((p.errors ?? []).map((e) => [e.path, e.message]));
  t.regex(byPath['body.rules[0].limit'] ?? '', /unknown metric 'memory\.total': nodes report connections\.publisher, connections\.subscriber, .*network\.egress, gpu\.load/);
  t.regex(byPath['body.rules[0].scaleOut'] ?? '', /unknown metric 'conections\.subscriber'/);
  isProblem(t, await svc.get('/as/v1/nodegroups/bad'), 404, 'NODE_GROUP_NOT_FOUND');

  const custom = staticGroup({ name: 'custom', rules: [{ region: 'r1', role: 'edge', min: 0, max: 2, limit: 200, scaleOut: 'avg(gpu.load) > 0.8', rank: 'connections.subscriber + 10 * gpu.load' }] });
  t.is((await svc.send('POST', '/as/v1/nodegroups', custom)).status, 201);
  const replaced = { ...custom, rules: [{ region: 'r1', role: 'edge', min: 0, max: 2, rank: 'cpu.temperature' }] };
  const q = isProblem(t, await svc.send('PUT', '/as/v1/nodegroups/custom', replaced), 400, 'VALIDATION_FAILED');
  t.regex(JSON.stringify(q.errors), /unknown metric 'cpu\.temperature'/);
  t.is(((await svc.get('/as/v1/nodegroups/custom')).json as { config: { rules: Array<{ rank: string }> } }).config.rules[0]!.rank, 'connections.subscriber + 10 * gpu.load', 'unchanged');
});
