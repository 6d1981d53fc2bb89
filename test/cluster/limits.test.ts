// Limits that hold across instances (docs/cluster.md, "Limits across instances"), with 3 real
// instances on a real 3-server NATS cluster: a token's lookups taken on every instance are paid
// for on every instance (each refuses for as long as the cluster's total asks), and failed logins
// on different instances add up to one throttle's count.
import test from 'ava';
import { request } from '../helpers/http.js';
import { Cluster, CLUSTER_PASSWORD, clusterConfig, metricOf, type Instance } from '../helpers/cluster.js';
import { until } from '../helpers/until.js';

const BURST = 20;

test('lookups and failed logins count for the cluster, not once per instance', async (t) => {
  // No node groups: a lookup takes its token before the group is looked for (a 404 is a granted lookup).
  const config = {
    ...clusterConfig([]),
    limits: { lookups: { admin: { perSecond: 1, burst: BURST } } },
    auth: { loginThrottle: { maxFailures: 3, maxAddressFailures: 50, baseDelay: '10m', maxDelay: '15m' } },
  };
  const c = await Cluster.start(t, config);
  await c.ready();
  const token = await c.login(c.instances[0]!);
  const auth = { authorization: `Bearer ${token}` };
  const lookup = (i: Instance) => request(i.url, 'GET', '/as/v1/streams/live/cam/subscribe?nodeGroup=none', undefined, auth);
  const received = (i: Instance, kind: 'lookups' | 'logins') => metricOf(i, 'switchyard_cluster_limit_reports_total', `kind="${kind}",direction="received"`);

  // Every instance's burst, asked for on all three at once: each grants what its bucket holds when
  // the lookup comes, whatever it has heard from the others by then.
  const firstAt = Date.now();
  const answers = await Promise.all(c.instances.flatMap((i) => Array.from({ length: BURST }, () => lookup(i))));
  const granted = answers.filter((r) => r.status === 404).length;
  t.deepEqual([...new Set(answers.map((r) => r.status))].sort(), granted === answers.length ? [404] : [404, 429]);
  t.log(`${granted} of ${answers.length} lookups granted at once across 3 instances (burst ${BURST} each, 1/s)`);
  // Once an instance has heard from the other two (within 100 ms and a hop), its bucket holds
  // BURST − granted plus what it refilled since: it refuses, for (granted − BURST + 1) s less the
  // time since. Asked until it says so (a refused lookup costs nothing); one instance alone would
  // say 1 s at most, and grant again a second later.
  for (const i of c.instances) {
    let said = '';
    await until(
      async () => {
        const r = await lookup(i);
        const elapsed = Math.ceil((Date.now() - firstAt) / 1000);
        said = `${r.status} Retry-After ${r.headers.get('retry-after')} after ${granted} granted, ${elapsed} s`;
        return r.status === 429 && Number(r.headers.get('retry-after')) >= granted - BURST + 1 - elapsed;
      },
      10_000,
      `${i.id} refusing for what the whole cluster granted`,
    ).catch((err: Error) => t.fail(`${err.message}; last: ${said}`));
  }
  t.true(
    (await Promise.all(c.instances.map((i) => received(i, 'lookups')))).every((n) => n >= 2),
    'reports of lookups received',
  );

  // Three failed logins of one user from one address, one on each instance: the pair is refused on
  // every instance (maxFailures 3), even with the right password. Alone, each would have seen one.
  // Reports of logins received so far (the test's own successful login was one): two more each.
  const before = await Promise.all(c.instances.map((i) => received(i, 'logins')));
  for (const i of c.instances) {
    const r = await request(i.url, 'POST', '/as/v1/auth/login', { username: 'admin', password: 'wrong-password' });
    t.is(r.status, 401, `${i.id}: ${r.text}`);
  }
  for (const [n, i] of c.instances.entries()) await until(async () => (await received(i, 'logins')) >= before[n]! + 2, 10_000, `${i.id} told of the others' failed logins`);
  for (const i of c.instances) {
    const r = await request(i.url, 'POST', '/as/v1/auth/login', { username: 'admin', password: CLUSTER_PASSWORD });
    t.is(r.status, 429, `${i.id}: ${r.text}`);
    t.true(Number(r.headers.get('retry-after')) > 60, `${i.id}: Retry-After ${r.headers.get('retry-after')}`);
  }
});
