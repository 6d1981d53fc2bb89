// Node groups in cluster mode (docs/cluster.md): created through any instance and served by all;
// the same name created on another instance is refused; deleted through any instance, the group
// goes from all of them, its log too (Terraform groups: terraform.test.ts).
import test from 'ava';
import { request } from '../helpers/http.js';
import { staticGroup } from '../helpers/fixtures.js';
import { Cluster, clusterConfig, clusterGroup } from '../helpers/cluster.js';

import { readLog } from '../helpers/wal-reader.js';
import { until } from '../helpers/until.js';

test('a node group created on one instance is served by all, refused twice, deleted everywhere with its log', async (t) => {
  const c = await Cluster.start(t, clusterConfig([staticGroup({ name: 'g' })]), { instances: 2 });
  await c.ready();
  const [a, b] = c.instances as [(typeof c.instances)[0], (typeof c.instances)[0]];
  const token = await c.login(a);
  const auth = { authorization: `Bearer ${token}` };

  const k = clusterGroup('k', 95, 0, 0);
  const created = await request(a.url, 'POST', '/as/v1/nodegroups', k, auth);
  t.is(created.status, 201, created.text);
  await until(async () => (await request(b.url, 'GET', '/as/v1/nodegroups/k', undefined, auth)).status === 200, 30_000, 'the new group on the other instance');
  const again = await request(b.url, 'POST', '/as/v1/nodegroups', k, auth);
  t.is(again.status, 409, again.text);
  await until(async () => (await c.ownerOf('k', b)) !== null, 30_000, 'an owner for the new group');
  const p = await request(
    b.url,
    'POST',
    '/as/v1/provision/k',
    { streamName: 'show', region: 'here', streams: [{ name: 'show_360', level: 1, videoBR: 800000, videoWidth: 640, videoHeight: 360, videoFPS: 30, audioBR: 64000 }] },
    auth,
  );
  t.is(p.status, 201, p.text);
  t.true((await readLog(c.nats.urls(), 'k')).length > 0, 'the group has a log');

  const deleted = await request(b.url, 'DELETE', '/as/v1/nodegroups/k', undefined, auth);
  t.is(deleted.status, 202, deleted.text);
  for (const i of [a, b]) await until(async () => (await request(i.url, 'GET', '/as/v1/nodegroups/k', undefined, auth)).status === 404, 40_000, `the group gone from ${i.id}`);
  await until(async () => (await readLog(c.nats.urls(), 'k')).length === 0, 30_000, 'its log purged');
  t.deepEqual(Object.keys(((await request(a.url, 'GET', '/as/v1/readyz')).json as { owners: object }).owners), ['g']);

  // Made again under the same name: a new group, served, with nothing of the old one.
  t.is((await request(b.url, 'POST', '/as/v1/nodegroups', k, auth)).status, 201);
  await until(
    async () =>
      (
        await request(
          a.url,
          'POST',
          '/as/v1/provision/k',
          { streamName: 'other', region: 'here', streams: [{ name: 'other_360', level: 1, videoBR: 800000, videoWidth: 640, videoHeight: 360, videoFPS: 30, audioBR: 64000 }] },
          auth,
        )
      ).status === 201,
    // Deadlines, not measures: a new group's lease is free after a TTL of answered probes, then its actor starts.
    40_000,
    'the new k served',
  );
  t.is((await request(a.url, 'GET', '/as/v1/provision/k/show', undefined, auth)).status, 404);
  t.is((await request(b.url, 'GET', '/as/v1/provision/k/other', undefined, auth)).status, 200);
});
