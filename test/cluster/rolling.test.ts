// SIGTERM hands groups over with no failed lookup, and a rolling restart of every instance under
// lookup load fails none (docs/cluster.md). The load balances as a balancer does: a connection
// refused by a stopped instance is sent to the next one; every answer must be a 200.
import test from 'ava';
import { request } from '../helpers/http.js';
import { Cluster, clusterConfig, clusterGroup, slowBindings } from '../helpers/cluster.js';
import { LookupLoad } from '../helpers/cluster-load.js';
import { until } from '../helpers/until.js';

test('SIGTERM of an owner, then a rolling restart of all three under lookup load: no lookup fails, nothing acknowledged lost', async (t) => {
  const c = await Cluster.start(t, clusterConfig([slowBindings(clusterGroup('g', 50)), slowBindings(clusterGroup('h', 51))]));
  await c.ready();
  const token = await c.login(c.instances[0]!);
  const auth = { authorization: `Bearer ${token}` };
  for (const g of ['g', 'h'])
    await until(async () => (await request(c.instances[0]!.url, 'GET', `/as/v1/streams/live/probe/publish?nodeGroup=${g}`, undefined, auth)).status === 200, 30_000, `an origin in service in ${g}`);

  const loads = ['g', 'h'].map((g) => new LookupLoad(() => c.running(), token, g, `${g}-`));
  for (const l of loads) l.start(2);
  await until(() => loads.every((l) => l.acknowledged.size >= 20), 30_000, 'bindings acknowledged');

  const check = async (when: string) => {
    for (const [g, l] of [
      ['g', loads[0]!],
      ['h', loads[1]!],
    ] as const) {
      const acknowledged = [...l.acknowledged];
      for (const [k, [stream, nodeId]] of acknowledged.entries()) {
        if (k % 5 !== 0 && k < acknowledged.length - 5) continue; // a sample, and the latest
        const via = c.running()[k % c.running().length]!;
        const r = await request(via.url, 'GET', `/as/v1/streams/live/${stream}/publish?nodeGroup=${g}`, undefined, auth);
        t.is(r.status, 200, `${when}: ${stream}: ${r.text}`);
        t.is((r.json as { nodeId: string }).nodeId, nodeId, `${when}: ${stream}`);
      }
    }
  };

  // SIGTERM of g's owner: handed over, measured from the signal to the first new binding elsewhere.
  const owner = c.byId((await c.ownerOf('g'))!);
  const at = Date.now();
  t.is(await c.kill(owner, 'SIGTERM'), 0);
  const exited = Date.now();
  t.log(`SIGTERM → exit (drain and hand-over): ${exited - at} ms`);
  await until(() => loads[0]!.since(exited).some((a) => a.status === 200 && a.fresh), 10_000, 'g served elsewhere');
  t.not(await c.ownerOf('g'), owner.id);
  await c.spawn(owner);
  await c.ready();
  await check('after the SIGTERM');

  // A rolling restart: each instance in turn stopped, started again and ready before the next.
  for (const i of [...c.instances]) {
    t.is(await c.kill(i, 'SIGTERM'), 0, `${i.id} stopped cleanly`);
    await c.spawn(i);
    await c.ready();
    const mark = Date.now();
    await until(() => loads.every((l) => l.since(mark).filter((a) => a.status === 200).length >= 10), 20_000, `load served after restarting ${i.id}`);
    await check(`after restarting ${i.id}`);
  }
  for (const l of loads) await l.stop();

  const failed = loads.flatMap((l) => l.answers.filter((a) => a.status !== 200));
  t.deepEqual(failed.slice(0, 5), [], `${failed.length} of ${loads.reduce((n, l) => n + l.answers.length, 0)} lookups failed`);
  t.deepEqual(
    loads.flatMap((l) => l.conflicts),
    [],
  );
});
