// Random sequences of acknowledged writes through a real node-group actor (worker thread, LMDB),
// then the actor is killed or stopped and a new one loads the same directory: it must hold
// exactly what was acknowledged (docs/persistence.md).
import { rmSync } from 'node:fs';
import test from 'ava';
import fc from 'fast-check';
import { ActorHost } from '../../actors/host.js';
import type { NodeGroup } from '../../src/config/types.js';
import { openStore } from '../../src/store/store.js';
import { parsedGroup } from '../helpers/fixtures.js';
import { hostOf, staticGroup, tempDir } from '../helpers/service.js';

const group: NodeGroup = parsedGroup(staticGroup({ name: 'g' }));
const rendition = (name: string, level: number) => ({ name, level, videoBR: 1_000_000, videoWidth: 640, videoHeight: 360, videoFPS: 30, audioBR: 64_000 });

type Op = { op: 'create' | 'replace'; stream: number; region: 'r1' | 'r2' } | { op: 'delete'; stream: number } | { op: 'publish'; stream: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constantFrom<'create' | 'replace'>('create', 'replace'), stream: fc.integer({ min: 0, max: 6 }), region: fc.constantFrom<'r1' | 'r2'>('r1', 'r2') }),
  fc.record({ op: fc.constant('delete' as const), stream: fc.integer({ min: 0, max: 6 }) }),
  fc.record({ op: fc.constant('publish' as const), stream: fc.integer({ min: 0, max: 12 }) }),
);

async function host(dataDir: string): Promise<ActorHost> {
  const h = new ActorHost({ dataDir, durability: 'commit', onEvents: () => {} });
  await h.startGroups([group]);
  return h;
}

test('after a crash or a stop, the store holds exactly the acknowledged provisions and bindings', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 40 }), fc.boolean(), async (ops, crash) => {
      const dir = tempDir('switchyard-store-');
      try {
        let h = await host(dir);
        const g = h.group('g')!;
        await g.call(
          'addNodes',
          group.platform.static.nodes.map((n) => ({ id: n.id, role: n.role, region: n.region, platform: { type: 'static' as const, address: n.address }, state: 'CREATED' as const })),
          Date.now(),
        );
        for (const n of group.platform.static.nodes) await g.call('heartbeats', [[n.id, { ready: true, metrics: {} }]]);

        const provisions = new Map<string, string>();
        const bindings = new Map<string, string>();
        for (const o of ops) {
          const name = `s${o.stream}`;
          if (o.op === 'create' || o.op === 'replace') {
            const r = await g.call('putProvision', { streamName: name, region: o.region, streams: [rendition(`${name}_a`, 1)] }, o.op);
            if (r.ok) provisions.set(name, o.region);
          } else if (o.op === 'delete') {
            if ((await g.call('deleteProvision', name)).ok) provisions.delete(name);
          } else {
            const r = (await g.call('lookups', [['publish', name, ['r1', 'r2']]]))[0]!;
            if (r.ok) bindings.set(name, r.node.nodeId);
          }
        }
        // A crash ends the thread with no chance to flush; the host is then stopped so that it
        // does not restart the actor itself (a new host plays the restarted process).
        if (crash) await g.crash();
        await h.stop(false);

        h = await host(dir);
        const again = h.group('g')!;
        const stored = await again.call('listProvisions', undefined, 1000);
        const streams = await again.call('listStreams', undefined, 1000);
        await h.stop(false);
        const gotProvisions = new Map(stored.map((p) => [p.streamName, p.region]));
        const gotBindings = new Map(streams.map((s) => [s.name, s.origin.nodeId]));
        return JSON.stringify([...gotProvisions].sort()) === JSON.stringify([...provisions].sort()) && JSON.stringify([...gotBindings].sort()) === JSON.stringify([...bindings].sort());
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }),
    { numRuns: 25 },
  );
  t.pass();
});

test('a crashed actor is restarted from the store; meanwhile calls fail as unavailable, never hang', async (t) => {
  const dir = tempDir('switchyard-store-');
  const events: string[] = [];
  let restarted = () => {};
  const back = new Promise<void>((resolve) => (restarted = resolve));
  const h = await hostOf(t, dir, [group], (batch) => {
    events.push(...batch.map((e) => e.type));
    if (batch.some((e) => e.type === 'actor.restarted')) restarted();
  });
  const g = h.group('g')!;
  t.true((await g.call('putProvision', { streamName: 'keep', region: 'r1', streams: [rendition('keep_a', 1)] }, 'create')).ok);
  await g.crash();
  t.false(g.ready);
  await t.throwsAsync(() => g.call('counts'), { name: 'ActorUnavailable' });
  await back;
  t.true(g.ready);
  t.truthy(await g.call('getProvision', 'keep'));
  t.true(events.includes('actor.restarted'));
});

test('right after a start, lookups find stored bindings the background load has not reached yet', async (t) => {
  const dir = tempDir('switchyard-store-');
  const store = openStore(dir);
  const origins = group.platform.static.nodes.filter((n) => n.role === 'origin');
  await store.nodes.transaction(() => {
    for (const n of group.platform.static.nodes) {
      store.nodes.put(['g', n.id], {
        id: n.id,
        group: 'g',
        role: n.role,
        region: n.region,
        state: 'INSERVICE',
        stateSince: 0,
        createdAt: 0,
        platform: { type: 'static', address: n.address },
        parent: null,
      });
    }
  });
  const COUNT = 200_000;
  for (let c = 0; c < COUNT; c += 50_000) {
    await store.bindings.transaction(() => {
      for (let i = c; i < c + 50_000; i++)
        store.bindings.put(['g', `s${String(i).padStart(6, '0')}`], {
          stream: `s${String(i).padStart(6, '0')}`,
          origin: origins[i % origins.length]!.id,
          state: 'LIVE',
          boundAt: 1_795_000_000_000,
          since: 1_795_000_000_000,
        });
    });
  }
  await store.close();
  const h = await hostOf(t, dir, [group]);
  const g = h.group('g')!;
  for (const n of group.platform.static.nodes) await g.call('heartbeats', [[n.id, { ready: true, metrics: {} }]]);
  // The last stored stream: far beyond what a first chunk holds.
  const last = `s${String(COUNT - 1).padStart(6, '0')}`;
  const r = await g.lookup('publish', last, ['r1', 'r2']);
  t.like(r, { ok: true, node: { nodeId: origins[(COUNT - 1) % origins.length]!.id } }, 'the stored origin, not a new choice');
  const list = await g.call('listStreams', undefined, 1000);
  t.is(list[0]!.name, 's000000');
  t.is((await g.call('counts')).bindings.LIVE + (await g.call('counts')).bindings.PENDING, COUNT, 'every stored binding is there once loaded');
});

test('writes asked for just before close land, and a write asked for after it is refused where it is asked', async (t) => {
  const dir = tempDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = openStore(dir);
  // Neither is awaited: lmdb-js starts their batch on the next turn, after close() was called
  // (before, that batch threw "The environment is already closed" with no caller to hear it).
  const { committed } = store.write(() => void store.events.put(1, { type: 'x', at: 1, seq: 1 } as never));
  void store.meta.put('k', 'v');
  const closed = store.close();
  t.throws(() => store.write(() => {}), { name: 'StoreUnavailable' });
  await closed;
  t.true(await committed);
  const again = openStore(dir);
  t.teardown(() => again.close());
  t.is(again.meta.get('k'), 'v');
  t.like(again.events.get(1), { seq: 1 });
});
