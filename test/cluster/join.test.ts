// Instances joining (docs/cluster.md): the groups an instance ranks first for (rendezvous hashing)
// move to it, one at a time once it has been live a while; no group moves twice, and the groups
// the first instance keeps never move at all.
import test from 'ava';
import { request } from '../helpers/http.js';
import { staticGroup } from '../helpers/fixtures.js';
import { Cluster, clusterConfig } from '../helpers/cluster.js';

import { rank } from '../../src/policy/cluster/hrw.js';
import { until } from '../helpers/until.js';

test('two instances join one that owns every group: each takes the groups it ranks first for, no group moves twice', async (t) => {
  const names = ['g1', 'g2', 'g3', 'g4', 'g5'];
  const c = await Cluster.start(
    t,
    clusterConfig(
      names.map((name) => staticGroup({ name })),
      // 2 s: a joining instance is busy starting actors; with 1 s, a stall of its event loop
      // on a loaded 2-core machine lost a lease it had just taken, and the group moved back.
      '2s',
    ),
    { instances: 1 },
  );
  await c.ready();
  const first = c.instances[0]!;
  for (const g of names) t.is(await c.ownerOf(g), first.id);

  const history = new Map(names.map((g) => [g, [first.id] as string[]]));
  let sampling = true;
  const sample = async () => {
    const r = await request(first.url, 'GET', '/as/v1/readyz').catch(() => null);
    const owners = (r?.json as { owners?: Record<string, string | null> } | undefined)?.owners ?? {};
    for (const g of names) {
      const o = owners[g];
      const h = history.get(g)!;
      if (o && h.at(-1) !== o) h.push(o);
    }
  };
  const sampler = (async () => {
    while (sampling) {
      await sample();
      await new Promise((r) => setTimeout(r, 100));
    }
  })();

  const joined = [c.add(), c.add()];
  await Promise.all(joined.map((i) => c.spawn(i)));
  const ids = c.instances.map((i) => i.id);
  const wanted = Object.fromEntries(names.map((g) => [g, rank(g, ids)[0]!]));
  await until(
    async () => {
      const r = await request(first.url, 'GET', '/as/v1/readyz');
      const owners = (r.json as { owners?: Record<string, string | null> }).owners ?? {};
      return names.every((g) => owners[g] === wanted[g]);
    },
    90_000,
    `owners as ranked: ${JSON.stringify(wanted)}`,
  );
  sampling = false;
  await sampler;
  await sample();

  for (const g of names) {
    const h = history.get(g)!;
    t.deepEqual(h, wanted[g] === first.id ? [first.id] : [first.id, wanted[g]], `${g} went ${h.join(' → ')}`);
  }
  t.true(
    names.some((g) => wanted[g] !== first.id),
    'some group moved',
  );
});
