// Cluster mode (docs/cluster.md), on a real 3-server nats-server cluster and 3 real instances:
// any instance answers anything, a token minted by one is valid on all, each group has one owner.
import test from 'ava';
import { request } from '../helpers/http.js';
import { Cluster, CLUSTER_PASSWORD, clusterConfig, metricOf } from '../helpers/cluster.js';
import { waitForEvents } from '../helpers/events.js';
import { until } from '../helpers/until.js';

test('any instance answers: one owner per group, the same binding through every instance, tokens and password changes shared', async (t) => {
  const c = await Cluster.start(t, clusterConfig());
  await c.ready();
  // Ownership as it stays: a group first taken by an instance that does not rank first for it is
  // handed over calmly 10 × TTL later, which would fall inside this test.
  await c.settled(['g', 'h']);
  const [a, b, third] = c.instances as [never, never, never] as [(typeof c.instances)[0], (typeof c.instances)[0], (typeof c.instances)[0]];
  const token = await c.login(a);
  const auth = { authorization: `Bearer ${token}` };

  // Every instance names the same owner for each group.
  const owners = await Promise.all(c.instances.map((i) => request(i.url, 'GET', '/as/v1/readyz')));
  const seen = owners.map((r) => JSON.stringify((r.json as { owners: unknown }).owners));
  t.is(new Set(seen).size, 1, seen.join(' | '));

  // A publish lookup through A, then B and C: the same origin (the binding is the owner's).
  // The owner's supervisor starts the nodes; they come into service.
  await until(async () => (await request(a.url, 'GET', '/as/v1/streams/live/probe/publish?nodeGroup=g', undefined, auth)).status === 200, 30_000, 'an origin in service');
  const first = await request(a.url, 'GET', '/as/v1/streams/live/cam1/publish?nodeGroup=g', undefined, auth);
  t.is(first.status, 200, first.text);
  for (const i of [b, third]) {
    const r = await request(i.url, 'GET', '/as/v1/streams/live/cam1/publish?nodeGroup=g', undefined, auth);
    t.is(r.status, 200, r.text);
    t.is((r.json as { nodeId: string }).nodeId, (first.json as { nodeId: string }).nodeId);
  }
  // Provisions made on one are read on another.
  const p = await request(
    b.url,
    'POST',
    '/as/v1/provision/h',
    { streamName: 'show', region: 'here', streams: [{ name: 'show_360', level: 1, videoBR: 800000, videoWidth: 640, videoHeight: 360, videoFPS: 30, audioBR: 64000 }] },
    auth,
  );
  t.is(p.status, 201, p.text);
  const read = await request(third.url, 'GET', '/as/v1/provision/h/show', undefined, auth);
  t.is(read.status, 200, read.text);

  // Every group's events on any instance, numbered by the cluster's log: the same ids everywhere,
  // and a client resuming with Last-Event-ID on another instance gets exactly what followed.
  const fromB = await waitForEvents(b.url, token, (seen) => seen.some((e) => e.type === 'provision.changed') && new Set(seen.map((e) => e.group)).size >= 2);
  t.true(
    fromB.every((e, i) => i === 0 || e.seq! > fromB[i - 1]!.seq!),
    'ids only grow',
  );
  t.true(
    fromB.some((e) => e.type === 'cluster.owner'),
    'owner changes are events',
  );
  const middle = fromB[Math.floor(fromB.length / 2)]!.seq!;
  const fromC = await waitForEvents(third.url, token, (seen) => seen.length >= fromB.filter((e) => e.seq! > middle).length, { since: middle });
  t.deepEqual(
    fromC.slice(0, 5).map((e) => [e.seq, e.type]),
    fromB
      .filter((e) => e.seq! > middle)
      .slice(0, 5)
      .map((e) => [e.seq, e.type]),
  );

  // Metrics of its own: groups owned here, calls forwarded and served.
  const owned = await Promise.all(c.instances.map((i) => metricOf(i, 'switchyard_cluster_groups_owned')));
  t.is(
    owned.reduce((x, y) => x + y, 0),
    2,
    `groups owned per instance: ${owned.join(', ')}`,
  );
  const forwarded = await Promise.all(c.instances.map((i) => metricOf(i, 'switchyard_cluster_forwarded_calls_total')));
  const served = await Promise.all(c.instances.map((i) => metricOf(i, 'switchyard_cluster_served_calls_total')));
  t.true(forwarded.some((n) => n > 0) && served.some((n) => n > 0), `forwarded ${forwarded.join(', ')}; served ${served.join(', ')}`);

  // A password changed on B retires A's token on C.
  const changed = await request(b.url, 'POST', '/as/v1/auth/password', { currentPassword: CLUSTER_PASSWORD, newPassword: 'another-long-password' }, auth);
  t.is(changed.status, 204, changed.text);
  await until(async () => (await request(third.url, 'GET', '/as/v1/nodegroups', undefined, auth)).status === 401, 5000, 'the old token refused on a third instance');
  const relog = await request(third.url, 'POST', '/as/v1/auth/login', { username: 'admin', password: 'another-long-password' });
  t.is(relog.status, 200, relog.text);
});
