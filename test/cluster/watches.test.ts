// The buckets every instance watches (leases, live instances, shared state: docs/cluster.md), when
// the NATS server an instance is connected to is killed: nats.js's KV watch could then stand still
// for good (2 of 6 such kills on this machine), so that, say, a password changed elsewhere would not
// retire the old tokens on that instance. Each watch is checked against its bucket and made again
// (src/cluster/watch.ts). Here every instance's own server is killed in turn, and after each kill a
// password change on another instance must retire the old token on every instance.
import test from 'ava';
import { request } from '../helpers/http.js';
import { Cluster, CLUSTER_PASSWORD, clusterConfig, metricOf } from '../helpers/cluster.js';
import { until } from '../helpers/until.js';

test("every instance's watches keep up when the NATS server it is connected to is killed", async (t) => {
  const c = await Cluster.start(t, clusterConfig([]));
  await c.ready();
  let password = CLUSTER_PASSWORD;
  for (let round = 0; round < 3; round++) {
    const target = c.instances[round]!;
    const server = await c.nats.serverOf(`switchyard:${target.id}`);
    t.truthy(server, `${target.id}'s NATS server`);
    await c.nats.kill(server!);
    await c.nats.restart(server!);
    await until(() => c.nats.whole(), 60_000, `${server!.name} current again`);
    // A token minted before, then a password change on another instance: refused everywhere.
    const old = (await request(target.url, 'POST', '/as/v1/auth/login', { username: 'admin', password })).json as { accessToken: string };
    const other = c.instances[(round + 1) % 3]!;
    const next = `changed-in-round-${round}`;
    // Right after the kill, the bucket's new leader can refuse the compare-and-set though nobody else
    // wrote (nats-server 2.9: a leader just elected checks against what it has applied so far; seen
    // as the revision found one below, or one above, the one every instance had seen). The API then
    // answers 503, nothing changed, "log in again": a client tries again, as here.
    let conflicts = 0;
    await until(
      async () => {
        const changed = await request(other.url, 'POST', '/as/v1/auth/password', { currentPassword: password, newPassword: next }, { authorization: `Bearer ${old.accessToken}` });
        if (changed.status === 503 && (changed.json as { code?: string }).code === 'STORE_UNAVAILABLE') conflicts++;
        else t.is(changed.status, 204, changed.text);
        return changed.status === 204;
      },
      30_000,
      `the password changed on ${other.id}`,
    );
    password = next;
    for (const i of c.instances)
      await until(
        async () => (await request(i.url, 'GET', '/as/v1/nodegroups', undefined, { authorization: `Bearer ${old.accessToken}` })).status === 401,
        15_000,
        `the old token refused on ${i.id} after ${server!.name}, ${target.id}'s server, was killed`,
      );
    const restarts = await Promise.all(c.instances.map((i) => metricOf(i, 'switchyard_cluster_watch_restarts_total', 'bucket="meta"')));
    t.log(`round ${round}: ${server!.name} (${target.id}'s) killed; meta watches made again per instance: ${restarts.join(', ')}; password changes refused as conflicts first: ${conflicts}`);
  }
});
