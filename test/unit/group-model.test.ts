import test from 'ava';
import fc from 'fast-check';
import type { NodeGroup } from '../../src/config/types.js';
import type { EventBody } from '../../src/domain/events.js';
import { GroupModel } from '../../src/model/group-model.js';
import { parsedGroup, staticGroup } from '../helpers/fixtures.js';

const REGIONS = ['r1', 'r2', 'r3'];
const LIMIT = 4;

function group(overrides: Record<string, unknown> = {}, selection: object = { strategy: 'least-loaded' }): NodeGroup {
  const g = staticGroup({
    regions: REGIONS,
    rules: REGIONS.flatMap((region) => [
      { region, role: 'origin', min: 0, max: 10, limit: LIMIT },
      { region, role: 'edge', min: 0, max: 10, limit: LIMIT },
      { region, role: 'transcoder', min: 0, max: 10, limit: LIMIT },
    ]),
    ...overrides,
  });
  return parsedGroup({ ...g, selection });
}

/** A seeded random source, so that a failing run can be replayed. */
function seeded(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

function addNodes(model: GroupModel, nodes: Array<{ id: string; role: 'origin' | 'edge' | 'transcoder'; region: string; load?: number }>, now = 0) {
  for (const n of nodes) model.addNode({ id: n.id, role: n.role, region: n.region, platform: { type: 'static', address: `10.0.0.${n.id}` }, state: 'CREATED' }, now);
  for (const n of nodes.filter((x) => x.role !== 'edge')) model.heartbeat(n.id, { ready: true, metrics: { 'connections.publisher': n.load ?? 0 } }, now);
  for (const n of nodes.filter((x) => x.role === 'edge')) model.heartbeat(n.id, { ready: true, metrics: { 'connections.subscriber': n.load ?? 0 } }, now);
  model.takeEffects();
}

/** `count` equally idle origins in r1, then `lookups` publishes before any heartbeat: the publishes each origin got, or null if one failed. */
function burst(model: GroupModel, count: number, lookups: number): number[] | null {
  addNodes(
    model,
    Array.from({ length: count }, (_, i) => ({ id: `o${i}`, role: 'origin' as const, region: 'r1' })),
  );
  const hits = new Map<string, number>();
  for (let i = 0; i < lookups; i++) {
    const r = model.publish(`s${i}`, ['r1'], 1);
    if (!r.ok) return null;
    hits.set(r.node.nodeId, (hits.get(r.node.nodeId) ?? 0) + 1);
  }
  return Array.from({ length: count }, (_, i) => hits.get(`o${i}`) ?? 0);
}

type Op = { op: 'beat'; node: number; load: number } | { op: 'fault'; node: number } | { op: 'publish'; stream: number; order: number };

const originSet = fc.array(fc.record({ region: fc.constantFrom(...REGIONS), load: fc.integer({ min: 0, max: LIMIT + 1 }) }), { minLength: 1, maxLength: 8 });
const opList = (n: number) =>
  fc.array(
    fc.oneof(
      fc.record({ op: fc.constant('beat' as const), node: fc.integer({ min: 0, max: n - 1 }), load: fc.integer({ min: 0, max: LIMIT + 1 }) }),
      fc.record({ op: fc.constant('fault' as const), node: fc.integer({ min: 0, max: n - 1 }) }),
      fc.record({ op: fc.constant('publish' as const), stream: fc.integer({ min: 0, max: 12 }), order: fc.integer({ min: 0, max: 5 }) }),
    ),
    { maxLength: 80 },
  );

const ORDERS = [
  ['r1', 'r2', 'r3'],
  ['r1', 'r3', 'r2'],
  ['r2', 'r1', 'r3'],
  ['r2', 'r3', 'r1'],
  ['r3', 'r1', 'r2'],
  ['r3', 'r2', 'r1'],
];

test('a publish lookup picks an in-service origin under its limit, least loaded, in the first region with room; bindings stick', (t) => {
  fc.assert(
    fc.property(
      originSet.chain((origins) => fc.tuple(fc.constant(origins), opList(origins.length))),
      ([origins, ops]) => {
        const model = new GroupModel(group());
        const nodes = origins.map((o, i) => ({ id: `o${i}`, role: 'origin' as const, region: o.region, load: o.load }));
        addNodes(model, nodes);
        // The reference: what each node last reported, the streams bound to it (none is published
        // here: each counts until it would be, whatever the heartbeats say), its state.
        const reported = nodes.map((n) => n.load);
        const up = nodes.map(() => true);
        const bound = new Map<number, number>();
        const expected = (i: number) => [...bound.values()].filter((at) => at === i).length;
        let now = 0;
        for (const o of ops as Op[]) {
          now += 10;
          if (o.op === 'beat') {
            model.heartbeat(`o${o.node}`, { ready: true, metrics: { 'connections.publisher': o.load } }, now);
            reported[o.node] = o.load;
            up[o.node] = true;
          } else if (o.op === 'fault') {
            model.applyNodeEvent(`o${o.node}`, { type: 'fault', reason: 'test' }, now);
            up[o.node] = false;
          } else {
            const order = ORDERS[o.order]!;
            const result = model.publish(`s${o.stream}`, order, now);
            const load = (i: number) => reported[i]! + expected(i);
            const previous = bound.get(o.stream);
            if (previous !== undefined && up[previous]) {
              if (!result.ok || result.node.nodeId !== `o${previous}`) return false;
              continue;
            }
            const region = order.find((r) => nodes.some((n, i) => n.region === r && up[i] && load(i) < LIMIT));
            if (region === undefined) {
              if (result.ok || result.code !== 'NO_CAPACITY') return false;
              continue;
            }
            if (!result.ok) return false;
            const chosen = Number(result.node.nodeId.slice(1));
            const best = Math.min(...nodes.map((n, i) => (n.region === region && up[i] ? load(i) : Infinity)));
            if (nodes[chosen]!.region !== region || !up[chosen] || load(chosen) !== best || load(chosen) >= LIMIT) return false;
            bound.set(o.stream, chosen);
          }
          model.takeEffects();
        }
        return true;
      },
    ),
    { numRuns: 300 },
  );
  t.pass();
});

test('publishers sent to an origin keep their room until they publish or time out: a heartbeat before they connect frees none of it', (t) => {
  const model = new GroupModel(group({ timing: { publishTimeout: '20s', streamTimeout: '10s' } }));
  addNodes(model, [{ id: 'o1', role: 'origin', region: 'r1' }]);
  const publish = (stream: string, now: number) => model.publish(stream, ['r1'], now);
  for (let i = 0; i < LIMIT; i++) t.true(publish(`s${i}`, 1).ok);
  t.like(publish('over', 1), { ok: false, code: 'NO_CAPACITY' }, 'the limit is reached by lookups alone');
  // The origin reports before any of them has connected: its room stays taken.
  model.heartbeat('o1', { ready: true, metrics: { 'connections.publisher': 0 } }, 1_000);
  t.like(publish('over', 1_000), { ok: false, code: 'NO_CAPACITY' }, 'a heartbeat frees no room a publisher was sent to');
  // One publishes: it is counted once, by the node's report.
  model.heartbeat('o1', { ready: true, metrics: { 'connections.publisher': 1 }, streams: [{ name: 's0', publishing: true }] }, 2_000);
  t.like(publish('over', 2_000), { ok: false, code: 'NO_CAPACITY' }, 'counted once, not twice and not nowhere');
  t.is(model.binding('s0')?.state, 'LIVE');
  // It stops (the node reports nothing): its room is free again.
  model.heartbeat('o1', { ready: true, metrics: { 'connections.publisher': 0 } }, 3_000);
  t.like(publish('now-there-is-room', 3_000), { ok: true, node: { nodeId: 'o1' } });
  // The rest never publish: after publishTimeout their bindings go, and their room with them.
  model.tick(23_000);
  t.is(model.binding('s1'), undefined);
  const after = ['a', 'b'].map((s) => publish(s, 23_000));
  t.true(
    after.every((r) => r.ok),
    JSON.stringify(after),
  );
});

test("a viewer's room on its edge lasts until the edge's next heartbeat, which replaces the estimate with the node's own figure", (t) => {
  const model = new GroupModel(group());
  addNodes(model, [
    { id: 'o1', role: 'origin', region: 'r1' },
    { id: 'e1', role: 'edge', region: 'r1' },
  ]);
  t.true(model.publish('cam', ['r1'], 1).ok);
  model.heartbeat('o1', { ready: true, metrics: { 'connections.publisher': 1 }, streams: [{ name: 'cam', publishing: true }] }, 2);
  for (let i = 0; i < LIMIT; i++) t.like(model.subscribe('cam', ['r1'], 3), { ok: true, node: { nodeId: 'e1' } });
  t.like(model.subscribe('cam', ['r1'], 3), { ok: false, code: 'NO_CAPACITY' }, 'the limit is reached by lookups alone');
  // The edge reports before any viewer connected: its own figure replaces the estimate.
  model.heartbeat('e1', { ready: true, metrics: { 'connections.subscriber': 0 } }, 4);
  t.like(model.subscribe('cam', ['r1'], 5), { ok: true, node: { nodeId: 'e1' } });
});

test('a burst between two heartbeats spreads evenly over equally loaded nodes', (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 10 }), fc.integer({ min: 1, max: 60 }), (count, lookups) => {
      const model = new GroupModel(group({ rules: [{ region: 'r1', role: 'origin', min: 0, max: 10, limit: 1000 }] }));
      const per = burst(model, count, lookups);
      if (!per) return false;
      return Math.max(...per) - Math.min(...per) <= 1;
    }),
  );
  t.pass();
});

test("a subscriber gets an edge under the stream's origin, in the nearest region with room, least loaded", (t) => {
  fc.assert(
    fc.property(fc.array(fc.record({ region: fc.constantFrom(...REGIONS), load: fc.integer({ min: 0, max: LIMIT }) }), { minLength: 1, maxLength: 8 }), fc.constantFrom(...ORDERS), (edges, order) => {
      const model = new GroupModel(group());
      addNodes(model, [{ id: 'oA', role: 'origin', region: 'r1' }]);
      addNodes(
        model,
        edges.map((e, i) => ({ id: `e${i}`, role: 'edge' as const, region: e.region, load: e.load })),
      );
      const pub = model.publish('cam', ['r1'], 1);
      if (!pub.ok || pub.node.nodeId !== 'oA') return false;
      const sub = model.subscribe('cam', order, 2);
      const region = order.find((r) => edges.some((e) => e.region === r && e.load < LIMIT));
      if (region === undefined) return !sub.ok && sub.code === 'NO_CAPACITY';
      if (!sub.ok) return false;
      const chosen = Number(sub.node.nodeId.slice(1));
      const best = Math.min(...edges.map((e) => (e.region === region ? e.load : Infinity)));
      return sub.node.role === 'edge' && edges[chosen]!.region === region && edges[chosen]!.load === best;
    }),
  );
  t.pass();
});

test('subscribe needs a binding; a rendition resolves to its provisioned stream', (t) => {
  const model = new GroupModel(group());
  addNodes(model, [
    { id: 'o1', role: 'origin', region: 'r1' },
    { id: 'e1', role: 'edge', region: 'r1' },
    { id: 't1', role: 'transcoder', region: 'r1' },
  ]);
  const missing = model.subscribe('cam', ['r1'], 1);
  t.like(missing, { ok: false, status: 404, code: 'STREAM_NOT_FOUND' });
  t.like(model.transcode('show', ['r1'], 1), { ok: false, status: 404, code: 'PROVISION_NOT_FOUND' });
  const rendition = { level: 1, videoBR: 1_000_000, videoWidth: 640, videoHeight: 360, videoFPS: 30, audioBR: 64_000 };
  t.true(
    model.putProvision(
      {
        streamName: 'show',
        region: 'r1',
        streams: [
          { ...rendition, name: 'show_hi' },
          { ...rendition, name: 'show_lo', level: 2 },
        ],
      },
      'create',
      1,
    ).ok,
  );
  const tr = model.transcode('show', ['r1'], 2);
  t.like(tr, { ok: true, node: { nodeId: 't1', role: 'transcoder' } });
  t.like(model.subscribe('show_lo', ['r1'], 3), { ok: true, node: { nodeId: 'e1', role: 'edge' } });
  t.like(model.binding('show'), { origin: 'o1', transcoder: 't1', state: 'PENDING' });
  // The transcoder is told what to make and where to push it.
  const reply = model.heartbeat('t1', { ready: true, metrics: {} }, 4);
  t.like(reply?.transcode?.[0], { stream: 'show', origin: { nodeId: 'o1' } });
  t.deepEqual(
    reply?.transcode?.[0]?.renditions.map((r) => r.name),
    ['show_hi', 'show_lo'],
  );
  // The origin reporting a rendition makes the stream LIVE.
  model.heartbeat('o1', { ready: true, metrics: {}, streams: [{ name: 'show_hi', publishing: true }] }, 5);
  t.like(model.binding('show'), { state: 'LIVE' });
});

test('bindings turn LIVE when the origin lists them and go when it stops, or when never published', (t) => {
  // Binding times have one-second resolution: a timeout is never early, and at most two seconds late.
  const model = new GroupModel(group({ timing: { streamTimeout: '10s', publishTimeout: '20s' } }));
  addNodes(model, [{ id: 'o1', role: 'origin', region: 'r1' }]);
  t.true(model.publish('live', ['r1'], 0).ok);
  t.true(model.publish('never', ['r1'], 0).ok);
  model.heartbeat('o1', { ready: true, metrics: {}, streams: [{ name: 'live', publishing: true }] }, 1_000);
  t.like(model.binding('live'), { state: 'LIVE' });
  model.tick(11_000);
  t.truthy(model.binding('live'), 'not before streamTimeout');
  model.tick(13_000);
  t.is(model.binding('live'), undefined, 'streamTimeout after the last listing');
  t.truthy(model.binding('never'));
  model.tick(22_000);
  t.is(model.binding('never'), undefined, 'publishTimeout');
  const events = model.takeEffects().events.filter((e): e is Extract<EventBody, { type: 'stream.unbound' }> => e.type === 'stream.unbound');
  t.deepEqual(
    events.map((e) => e.stream),
    ['live', 'never'],
  );
});

test('a stream whose origin failed moves on its next publish lookup, and an event says so', (t) => {
  const model = new GroupModel(group());
  addNodes(model, [
    { id: 'o1', role: 'origin', region: 'r1' },
    { id: 'o2', role: 'origin', region: 'r1', load: 1 },
  ]);
  t.like(model.publish('cam', ['r1'], 1), { ok: true, node: { nodeId: 'o1' } });
  t.like(model.publish('cam', ['r1'], 2), { ok: true, node: { nodeId: 'o1' } }, 'sticky while in service');
  model.applyNodeEvent('o1', { type: 'fault', reason: 'silent' }, 3);
  model.takeEffects();
  t.like(model.publish('cam', ['r1'], 4), { ok: true, node: { nodeId: 'o2' } });
  t.true(model.takeEffects().events.some((e) => e.type === 'stream.moved' && e.from === 'o1' && e.to === 'o2'));
});

test('edges get a parent in their own region, and a new one when theirs fails', (t) => {
  const model = new GroupModel(group());
  addNodes(model, [
    { id: 'o1', role: 'origin', region: 'r1' },
    { id: 'o2', role: 'origin', region: 'r2' },
    { id: 'o3', role: 'origin', region: 'r1' },
    { id: 'e1', role: 'edge', region: 'r1' },
    { id: 'e2', role: 'edge', region: 'r2' },
    { id: 'e3', role: 'edge', region: 'r1' },
  ]);
  const parent = (id: string) => model.nodeRecord(id)?.parent;
  t.is(parent('e2'), 'o2');
  t.deepEqual([parent('e1'), parent('e3')].sort(), ['o1', 'o3'], 'children are spread over the parents of the region');
  const e1Parent = parent('e1')!;
  model.applyNodeEvent(e1Parent, { type: 'fault', reason: 'x' }, 5);
  t.not(parent('e1'), e1Parent);
  t.is(model.nodeRecord(parent('e1')!)?.region, 'r1');
});

test("every write is reported; a removed origin leaves its streams bound until their own timeouts, and they move on the publisher's next lookup", (t) => {
  const model = new GroupModel(group({ timing: { streamTimeout: '30s', publishTimeout: '60s' } }));
  addNodes(model, [
    { id: 'o1', role: 'origin', region: 'r1' },
    { id: 'o2', role: 'origin', region: 'r1', load: 1 },
    { id: 'e1', role: 'edge', region: 'r1' },
  ]);
  model.publish('cam', ['r1'], 1_000);
  t.deepEqual(
    model.takeEffects().writes.map((w) => `${w.kind}:${w.key}`),
    ['binding:cam'],
  );
  model.heartbeat('o1', { ready: true, metrics: {}, streams: [{ name: 'cam', publishing: true }] }, 2_000);
  model.applyNodeEvent('o1', { type: 'fault', reason: 'silent' }, 3_000);
  // faultTimeout later, the supervisor destroys it.
  model.applyNodeEvent('o1', { type: 'destroy' }, 4_000);
  model.applyNodeEvent('o1', { type: 'destroying' }, 4_000);
  model.applyNodeEvent('o1', { type: 'destroyed' }, 4_000);
  const removal = model.takeEffects();
  const writes = removal.writes.map((w) => `${w.kind}:${w.key}:${w.value === null ? 'removed' : 'put'}`);
  t.true(writes.includes('node:o1:removed'));
  t.false(writes.includes('binding:cam:removed'), 'the binding outlives its origin');
  t.false(removal.events.some((e) => e.type === 'stream.unbound'));
  t.like(model.binding('cam'), { origin: 'o1', state: 'LIVE' });
  // Viewers are told to come back (docs/nodes.md), not that the stream does not exist.
  t.like(model.subscribe('cam', ['r1'], 5_000), { ok: false, status: 503, code: 'NO_CAPACITY', retryAfter: 2 });
  t.like(model.publish('cam', ['r1'], 6_000), { ok: true, node: { nodeId: 'o2' } });
  t.true(model.takeEffects().events.some((e) => e.type === 'stream.moved' && e.stream === 'cam' && e.from === 'o1' && e.to === 'o2'));
  t.like(model.subscribe('cam', ['r1'], 7_000), { ok: true, node: { nodeId: 'e1' } });

  // A stream nobody moves ends by its own timeout: streamTimeout after its origin last listed it.
  model.publish('other', ['r1'], 8_000);
  model.heartbeat('o2', { ready: true, metrics: {}, streams: [{ name: 'other', publishing: true }] }, 9_000);
  model.applyNodeEvent('o2', { type: 'fault', reason: 'silent' }, 10_000);
  for (const event of ['destroy', 'destroying', 'destroyed'] as const) model.applyNodeEvent('o2', { type: event }, 11_000);
  model.takeEffects();
  model.tick(38_000);
  t.truthy(model.binding('other'), 'not before streamTimeout');
  model.tick(41_000);
  t.is(model.binding('other'), undefined);
  t.deepEqual(
    model
      .takeEffects()
      .events.filter((e) => e.type === 'stream.unbound')
      .map((e) => [e.stream, (e as { reason: string }).reason]),
    [['other', 'not published for 30000 ms']],
  );
});

test('a viewer of a stream on an origin without edges gets an idle edge moved there; a busy one is never moved', (t) => {
  // Streams bound where they are published (admission off: no lookup needed to publish).
  const model = new GroupModel(group({ admission: { enabled: false } }));
  addNodes(model, [
    { id: 'o1', role: 'origin', region: 'r1' },
    { id: 'o2', role: 'origin', region: 'r1', load: 1 },
    { id: 'e1', role: 'edge', region: 'r1' },
  ]);
  const first = model.nodeRecord('e1')!.parent;
  const other = first === 'o1' ? 'o2' : 'o1';
  // Bind a stream to the origin without the edge.
  model.heartbeat(other, { ready: true, metrics: {}, streams: [{ name: 'cam', publishing: true }] }, 1);
  t.like(model.binding('cam'), { origin: other });
  t.like(model.subscribe('cam', ['r1'], 2), { ok: true, node: { nodeId: 'e1' } });
  t.is(model.nodeRecord('e1')!.parent, other);
  // Now e1 has a viewer: a stream on the first origin cannot take it away.
  model.heartbeat(first!, { ready: true, metrics: {}, streams: [{ name: 'cam2', publishing: true }] }, 3);
  t.like(model.subscribe('cam2', ['r1'], 4), { ok: false, code: 'NO_CAPACITY' });
  t.is(model.nodeRecord('e1')!.parent, other);
});

test('after failover, viewers of a moved stream get edges under the new origin', (t) => {
  const model = new GroupModel(group());
  addNodes(model, [
    { id: 'o1', role: 'origin', region: 'r1' },
    { id: 'o2', role: 'origin', region: 'r1', load: 1 },
    { id: 'e1', role: 'edge', region: 'r1' },
    { id: 'e2', role: 'edge', region: 'r1' },
  ]);
  t.like(model.publish('cam', ['r1'], 1), { ok: true, node: { nodeId: 'o1' } });
  const under = (origin: string) => ['e1', 'e2'].find((e) => model.nodeRecord(e)!.parent === origin)!;
  t.like(model.subscribe('cam', ['r1'], 2), { ok: true, node: { nodeId: under('o1') } });
  model.applyNodeEvent('o1', { type: 'fault', reason: 'silent' }, 3);
  t.like(model.subscribe('cam', ['r1'], 4), { ok: false, code: 'NO_CAPACITY' }, 'until the publisher comes back, there is nothing to watch');
  t.like(model.publish('cam', ['r1'], 5), { ok: true, node: { nodeId: 'o2' } });
  const edge = model.subscribe('cam', ['r1'], 6);
  t.true(edge.ok);
  if (edge.ok) t.is(model.nodeRecord(edge.node.nodeId)!.parent, 'o2');
});

test('two choices: the pick is in the first region with room and within the near-equal band of the lightest there', (t) => {
  fc.assert(
    fc.property(
      fc.array(fc.record({ region: fc.constantFrom(...REGIONS), load: fc.integer({ min: 0, max: 40 }) }), { minLength: 1, maxLength: 12 }),
      fc.constantFrom(...ORDERS),
      fc.integer(),
      (origins, order, seed) => {
        const limit = 40;
        const model = new GroupModel(group({ rules: REGIONS.map((region) => ({ region, role: 'origin', min: 0, max: 20, limit })) }, { strategy: 'two-choices', nearEqual: 0.1 }), seeded(seed));
        addNodes(
          model,
          origins.map((o, i) => ({ id: `o${i}`, role: 'origin' as const, region: o.region, load: o.load })),
        );
        const r = model.publish('s', order, 1);
        const region = order.find((reg) => origins.some((o) => o.region === reg && o.load < limit));
        if (region === undefined) return !r.ok;
        if (!r.ok || r.node.region !== region) return false;
        const least = Math.min(...origins.filter((o) => o.region === region).map((o) => o.load));
        return origins[Number(r.node.nodeId.slice(1))]!.load <= least + Math.max(1, 0.1 * limit);
      },
    ),
    { numRuns: 400 },
  );
  t.pass();
});

test('two choices: a burst between heartbeats spreads within the band', (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 2, max: 10 }), fc.integer({ min: 1, max: 80 }), fc.integer(), (count, lookups, seed) => {
      const model = new GroupModel(group({ rules: [{ region: 'r1', role: 'origin', min: 0, max: 10, limit: 100 }] }, { strategy: 'two-choices', nearEqual: 0.02 }), seeded(seed));
      const per = burst(model, count, lookups);
      if (!per) return false;
      return Math.max(...per) - Math.min(...per) <= 2 + 1;
    }),
  );
  t.pass();
});

test('viewers go to an edge that already serves their stream, until it is full', (t) => {
  const model = new GroupModel(
    group(
      {
        rules: [
          { region: 'r1', role: 'origin', min: 0, max: 10, limit: 100 },
          { region: 'r1', role: 'edge', min: 0, max: 10, limit: 3 },
          { region: 'r2', role: 'edge', min: 0, max: 10, limit: 3 },
        ],
      },
      { strategy: 'two-choices', nearEqual: 0.05 },
    ),
    seeded(7),
  );
  addNodes(model, [
    { id: 'o1', role: 'origin', region: 'r1' },
    { id: 'e1', role: 'edge', region: 'r1' },
    { id: 'e2', role: 'edge', region: 'r1' },
    { id: 'e3', role: 'edge', region: 'r2' },
  ]);
  model.publish('cam', ['r1'], 1);
  // e2 already carries cam (it says so in its heartbeat), with one viewer; e1 is empty.
  model.heartbeat('e2', { ready: true, metrics: { 'connections.subscriber': 1 }, streams: [{ name: 'cam', subscribers: 1 }] }, 2);
  const picks = [1, 2, 3].map(() => model.subscribe('cam', ['r1', 'r2'], 3)).map((r) => (r.ok ? r.node.nodeId : r.code));
  t.deepEqual(picks.slice(0, 2), ['e2', 'e2'], 'one pull from the origin, not two');
  t.not(picks[2], 'e2', 'full: the next viewer goes elsewhere');
  // A viewer of a stream nobody serves yet: the lightest, nearest edge.
  model.publish('other', ['r1'], 4);
  const r = model.subscribe('other', ['r2', 'r1'], 5);
  t.like(r, { ok: true, node: { nodeId: 'e3' } });
});

test('deleting the provision of a live ABR stream keeps its renditions resolving until the stream ends', (t) => {
  const model = new GroupModel(group({ timing: { streamTimeout: '2s' } }));
  addNodes(model, [
    { id: 'o1', role: 'origin', region: 'r1' },
    { id: 'e1', role: 'edge', region: 'r1' },
    { id: 't1', role: 'transcoder', region: 'r1' },
  ]);
  const r = { level: 1, videoBR: 1_000_000, videoWidth: 640, videoHeight: 360, videoFPS: 30, audioBR: 64_000 };
  model.putProvision({ streamName: 'show', region: 'r1', streams: [{ ...r, name: 'show_lo' }] }, 'create', 0);
  model.transcode('show', ['r1'], 0);
  model.heartbeat('o1', { ready: true, metrics: {}, streams: [{ name: 'show_lo', publishing: true }] }, 10);
  t.true(model.deleteProvision('show').ok);
  t.like(model.subscribe('show_lo', ['r1'], 20), { ok: true, node: { nodeId: 'e1' } }, 'current viewers keep finding it');
  t.like(model.transcode('show', ['r1'], 30), { ok: false, code: 'PROVISION_NOT_FOUND' }, 'but nobody can start it again');
  model.tick(5_000);
  t.like(model.subscribe('show_lo', ['r1'], 5_100), { ok: false, code: 'STREAM_NOT_FOUND' }, 'once it ended, the rendition is gone');
});

test("a node that says why it is not ready leaves rotation with that reason, and an edge learns its parent's pull listener", (t) => {
  const model = new GroupModel(group());
  addNodes(model, [
    { id: 'o1', role: 'origin', region: 'r1' },
    { id: 'e1', role: 'edge', region: 'r1' },
  ]);
  // A parent that reports where it is pulled from: the edge's reply carries it.
  model.heartbeat('o1', { ready: true, metrics: {}, listeners: { publish: { protocol: 'rtmp', port: 1936 }, subscribe: { protocol: 'rtmp', port: 1936 } } }, 1);
  t.deepEqual(model.heartbeat('e1', { ready: true, metrics: {} }, 1)?.parent, { nodeId: 'o1', address: '10.0.0.o1', protocol: 'rtmp', port: 1936 });
  model.takeEffects();

  model.heartbeat('e1', { ready: false, metrics: {}, problem: 'nginx killed by SIGKILL; restarting (attempt 1)' }, 2);
  const { events } = model.takeEffects();
  t.like(
    events.find((e) => e.type === 'node.state'),
    { nodeId: 'e1', from: 'INSERVICE', to: 'STARTED', reason: 'not ready: nginx killed by SIGKILL; restarting (attempt 1)' },
  );
  t.is(model.nodeViews(undefined, 10).find((v) => v.id === 'e1')?.problem, 'nginx killed by SIGKILL; restarting (attempt 1)');
  t.like(model.subscribe('cam', ['r1'], 3), { ok: false });
  model.heartbeat('e1', { ready: true, metrics: {} }, 4);
  t.is(model.nodeViews(undefined, 10).find((v) => v.id === 'e1')?.problem, undefined);
  t.is(model.nodeRecord('e1')?.state, 'INSERVICE');
});

test('a group without edges serves viewers from the origin, with its player listener, only while it is in service', (t) => {
  const g = group({
    roles: { origin: { publish: { protocol: 'rtmp', port: 1935 }, subscribe: { protocol: 'rtmp', port: 1936 } } },
    nodes: [{ id: 'o1', role: 'origin', region: 'r1' }],
    rules: [{ region: 'r1', role: 'origin', min: 0, max: 10, limit: LIMIT }],
  });
  const model = new GroupModel(g);
  addNodes(model, [{ id: 'o1', role: 'origin', region: 'r1' }]);
  t.like(model.publish('cam', ['r1'], 1), { ok: true, node: { nodeId: 'o1', listener: { port: 1935 } } });
  t.like(model.subscribe('cam', ['r1'], 2), { ok: true, node: { nodeId: 'o1', role: 'origin', listener: { protocol: 'rtmp', port: 1936 } } });
  t.true(model.applyNodeEvent('o1', { type: 'drain' }, 3).ok);
  t.like(model.subscribe('cam', ['r1'], 4), { ok: false, status: 503, code: 'NO_CAPACITY' }, 'a draining origin takes no new viewers');
});

test('a first heartbeat that is ready moves the node CREATED → STARTED → INSERVICE, one event per move', (t) => {
  const model = new GroupModel(group());
  model.addNode({ id: 'o1', role: 'origin', region: 'r1', platform: { type: 'static', address: '10.0.0.1' }, state: 'CREATED' }, 0);
  model.takeEffects();
  model.heartbeat('o1', { ready: true, metrics: {} }, 1);
  const moves = model
    .takeEffects()
    .events.filter((e) => e.type === 'node.state')
    .map((e) => `${(e as { from: string }).from}→${(e as { to: string }).to}`);
  t.deepEqual(moves, ['CREATED→STARTED', 'STARTED→INSERVICE']);
  t.is(model.nodeRecord('o1')?.state, 'INSERVICE');
});

test("every answer names a listener: the node's own, else its role's, else RTMP on 1935", (t) => {
  const model = new GroupModel(group({ roles: { origin: {}, edge: { parentRole: 'origin', subscribe: { protocol: 'wss', port: 443 } }, transcoder: {} } }));
  addNodes(model, [
    { id: 'o1', role: 'origin', region: 'r1' },
    { id: 'e1', role: 'edge', region: 'r1' },
  ]);
  t.like(model.publish('cam', ['r1'], 1), { ok: true, node: { nodeId: 'o1', listener: { protocol: 'rtmp', port: 1935 } } });
  t.like(model.subscribe('cam', ['r1'], 2), { ok: true, node: { nodeId: 'e1', listener: { protocol: 'wss', port: 443 } } });
  model.heartbeat('o1', { ready: true, metrics: {}, listeners: { publish: { protocol: 'srt', port: 9000 } } }, 3);
  t.like(model.publish('cam', ['r1'], 4), { ok: true, node: { nodeId: 'o1', listener: { protocol: 'srt', port: 9000 } } });
});

test('bindings time out exactly as a scan of every binding at each tick would have it (expiry buckets), and origins know whether they carry live streams', (t) => {
  const ops = fc.array(
    fc.oneof(
      fc.record({ op: fc.constant('publish' as const), stream: fc.integer({ min: 0, max: 5 }) }),
      fc.record({ op: fc.constant('list' as const), streams: fc.uniqueArray(fc.integer({ min: 0, max: 5 }), { maxLength: 3 }) }),
      fc.record({ op: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 12_000 }) }),
      fc.record({ op: fc.constant('timeouts' as const), streamS: fc.integer({ min: 1, max: 15 }), publishS: fc.integer({ min: 1, max: 15 }) }),
    ),
    { maxLength: 60 },
  );
  // Admission off: a stream listed without a lookup is bound where it is listed, as the reference has it.
  const timed = (streamS: number, publishS: number) => group({ timing: { streamTimeout: `${streamS}s`, publishTimeout: `${publishS}s` }, admission: { enabled: false } });
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 15 }), fc.integer({ min: 1, max: 15 }), ops, (streamS, publishS, list) => {
      const model = new GroupModel(timed(streamS, publishS));
      addNodes(model, [{ id: 'o1', role: 'origin', region: 'r1' }]);
      // The reference: every binding, its state and times in whole seconds, scanned at each tick.
      const ref = new Map<string, { live: boolean; since: number; listed: number }>();
      let now = 0;
      const sec = () => Math.floor(now / 1000);
      for (const o of list) {
        if (o.op === 'publish') {
          const stream = `s${o.stream}`;
          // A full origin (more lookups than its limit since its last heartbeat) binds nothing.
          if (!model.publish(stream, ['r1'], now).ok) continue;
          if (!ref.has(stream)) ref.set(stream, { live: false, since: sec(), listed: sec() });
        } else if (o.op === 'list') {
          const streams = o.streams.map((i) => `s${i}`);
          model.heartbeat('o1', { ready: true, metrics: {}, streams: streams.map((name) => ({ name, publishing: true })) }, now);
          for (const stream of streams) {
            const b = ref.get(stream);
            if (b?.live) b.listed = sec();
            else ref.set(stream, { live: true, since: sec(), listed: sec() });
          }
        } else if (o.op === 'timeouts') {
          // An operator's new timing applies to the bindings already there.
          model.reconfigure(timed(o.streamS, o.publishS), now);
          streamS = o.streamS;
          publishS = o.publishS;
        } else {
          now += o.ms;
          model.tick(now);
          for (const [stream, b] of ref) if (b.live ? sec() - b.listed > streamS : sec() - b.since > publishS) ref.delete(stream);
          const held = ['s0', 's1', 's2', 's3', 's4', 's5'].filter((s) => model.binding(s) !== undefined);
          if (JSON.stringify(held) !== JSON.stringify([...ref.keys()].sort())) return false;
          // Scale-in takes origins with live publishers last: the count behind that follows too.
          if (model.facts()[0]!.hasLiveStreams !== [...ref.values()].some((b) => b.live)) return false;
        }
      }
      return true;
    }),
  );
  t.pass();
});

test('a drained node that went silent drains on when it comes back: no new viewers, and its reply says drain', (t) => {
  const model = new GroupModel(group());
  addNodes(model, [
    { id: '1', role: 'origin', region: 'r1' },
    { id: '2', role: 'edge', region: 'r1' },
    { id: '3', role: 'edge', region: 'r1' },
  ]);
  t.true(model.applyNodeEvent('2', { type: 'drain' }, 1).ok);
  t.true(model.applyNodeEvent('2', { type: 'fault', reason: 'silent' }, 2).ok);
  t.is(model.nodeRecord('2')?.state, 'FAULT');
  const reply = model.heartbeat('2', { ready: true, metrics: { 'connections.subscriber': 1 } }, 3);
  t.is(model.nodeRecord('2')?.state, 'SOFT_SUNSET');
  t.is(model.nodeRecord('2')?.stateSince, 1, "on the drain's own clock: a node that blips still reaches drainTimeout");
  t.true(reply?.drain);
  t.true(model.publish('s', ['r1'], 4).ok);
  for (let i = 0; i < LIMIT; i++) {
    const r = model.subscribe('s', ['r1'], 5);
    t.true(r.ok && r.node.nodeId === '3');
  }
  // A node that faulted in service comes back into service, as before.
  t.true(model.applyNodeEvent('3', { type: 'fault', reason: 'silent' }, 6).ok);
  model.heartbeat('3', { ready: true, metrics: {} }, 7);
  t.is(model.nodeRecord('3')?.state, 'INSERVICE');
  t.is(model.nodeRecord('3')?.faultedFrom, undefined);
});

test("by default the platform's addresses win over what a heartbeat says: a node token cannot send clients or peers elsewhere", (t) => {
  const model = new GroupModel(group());
  addNodes(model, [
    { id: '1', role: 'origin', region: 'r1' },
    { id: '2', role: 'edge', region: 'r1' },
    { id: '3', role: 'edge', region: 'r2' },
  ]);
  model.heartbeat('1', { ready: true, metrics: {}, address: { public: '203.0.113.66', private: '192.168.66.1' } }, 2);
  const r = model.publish('s', ['r1'], 3);
  t.true(r.ok && r.node.serverAddress === '10.0.0.1', JSON.stringify(r));
  const parentOf = (id: string) => model.heartbeat(id, { ready: true, metrics: {} }, 4)?.parent;
  t.like(parentOf('2'), { nodeId: '1', address: '10.0.0.1' });
  t.like(parentOf('3'), { nodeId: '1', address: '10.0.0.1' });
  t.is(model.nodeViews(undefined, 10).find((n) => n.id === '1')?.address, '10.0.0.1');
  // A node whose platform knows no address (a cloud node before Terraform's output) is still reachable by what it says.
  model.addNode({ id: 'x', role: 'origin', region: 'r2', platform: { type: 'terraform' }, state: 'CREATED' }, 5);
  model.heartbeat('x', { ready: true, metrics: {}, address: { private: '10.9.9.9' } }, 5);
  const x = model.publish('sx', ['r2'], 6);
  t.true(x.ok && x.node.serverAddress === '10.9.9.9', JSON.stringify(x));
});

test('with platform.trustNodeAddress, clients are sent to the public address a node declares, else the one its platform knows, never a private one it reports; peers in its region pull from the private one', (t) => {
  const trusting = group();
  trusting.platform.trustNodeAddress = true;
  const model = new GroupModel(trusting);
  addNodes(model, [{ id: '1', role: 'origin', region: 'r1' }]);
  const served = () => {
    const r = model.publish(`s${Math.random()}`, ['r1'], 1);
    return r.ok ? r.node.serverAddress : null;
  };
  t.is(served(), '10.0.0.1');
  model.heartbeat('1', { ready: true, metrics: {}, address: { private: '192.168.7.1' } }, 2);
  t.is(served(), '10.0.0.1', "the platform's address, not the agent's bind address");
  model.heartbeat('1', { ready: true, metrics: {}, address: { public: '203.0.113.7', private: '192.168.7.1' } }, 3);
  t.is(served(), '203.0.113.7');
  // An edge beside it pulls over the private network; one in another region over the public one.
  addNodes(model, [
    { id: '2', role: 'edge', region: 'r1' },
    { id: '3', role: 'edge', region: 'r2' },
  ]);
  const parentOf = (id: string) => model.heartbeat(id, { ready: true, metrics: {} }, 4)?.parent;
  t.like(parentOf('2'), { nodeId: '1', address: '192.168.7.1' });
  t.like(parentOf('3'), { nodeId: '1', address: '203.0.113.7' });
  // The node's report is its whole view: a public address it stops declaring is forgotten.
  model.heartbeat('1', { ready: true, metrics: {}, address: { private: '192.168.7.2' } }, 5);
  t.is(served(), '10.0.0.1', "back to the platform's address");
  t.deepEqual(model.nodeRecord('1')?.address, { private: '192.168.7.2' });
});

test('an origin that lists a stream without the publishing flag publishes it (docs/choosing-nodes.md); an edge that does, does not', (t) => {
  const model = new GroupModel(group());
  addNodes(model, [
    { id: 'o1', role: 'origin', region: 'r1' },
    { id: 'e1', role: 'edge', region: 'r1' },
  ]);
  t.true(model.publish('cam', ['r1'], 0).ok);
  model.heartbeat('e1', { ready: true, metrics: {}, streams: [{ name: 'cam', subscribers: 2 }] }, 1_000);
  t.like(model.binding('cam'), { state: 'PENDING' });
  model.heartbeat('o1', { ready: true, metrics: {}, streams: [{ name: 'cam' }] }, 2_000);
  t.like(model.binding('cam'), { state: 'LIVE' });
  // An explicit false on an origin is believed: it carries the stream, no publisher feeds it.
  model.heartbeat('o1', { ready: true, metrics: {}, streams: [{ name: 'other', publishing: false }] }, 3_000);
  t.is(model.binding('other'), undefined);
});

test('a storm of lookups that find no room asks for capacity once a second per role and region, not once per lookup', (t) => {
  const model = new GroupModel(group());
  addNodes(model, [{ id: '1', role: 'origin', region: 'r1', load: LIMIT }]);
  const asks = (now: number, n: number) => {
    for (let i = 0; i < n; i++) t.like(model.publish(`s${now}-${i}`, ['r1'], now), { ok: false, status: 503, code: 'NO_CAPACITY', retryAfter: 2 });
    return model.takeEffects().events.filter((e) => e.type === 'scaling.request');
  };
  t.like(asks(1_000, 1000), [{ role: 'origin', region: 'r1' }]);
  t.is(asks(1_999, 1000).length, 0, 'the same second');
  t.is(asks(2_000, 10).length, 1, 'the next second asks again');
  t.like(model.publish('x', ['r2', 'r1'], 2_000), { ok: false });
  t.like(model.takeEffects().events, [{ type: 'scaling.request', region: 'r2' }], 'another first region is another ask');
});

test('PENDING caps: per token and per group, freed when a stream goes LIVE or its binding goes, and counted again after a restart', (t) => {
  const g = group();
  g.limits = { pendingBindings: 4, pendingPerToken: 2 };
  const model = new GroupModel(g);
  addNodes(model, [{ id: 'o', role: 'origin', region: 'r1' }]);
  t.true(model.publish('a1', ['r1'], 1, 'alice').ok);
  t.true(model.publish('a2', ['r1'], 1, 'alice').ok);
  t.like(model.publish('a3', ['r1'], 1, 'alice'), { ok: false, status: 429, code: 'RATE_LIMITED' });
  t.true(model.publish('a1', ['r1'], 1, 'alice').ok, 'bound already: not new');
  t.true(model.publish('b1', ['r1'], 1, 'bob').ok);
  t.true(model.publish('x1', ['r1'], 1).ok, 'a lookup with no subject counts toward the group only');
  t.like(model.publish('b2', ['r1'], 1, 'bob'), { ok: false, status: 429 }, 'the group is at its cap');
  // a1 goes live: alice and the group each have room for one more.
  model.takeEffects();
  model.heartbeat('o', { ready: true, metrics: {}, streams: [{ name: 'a1', publishing: true }] }, 2);
  const records = model.takeEffects().writes.filter((w) => w.kind === 'binding');
  t.like(records.find((w) => w.key === 'a1')?.value, { state: 'LIVE' });
  t.false(
    records.some((w) => w.key === 'a1' && w.value !== null && 'by' in w.value),
    'a LIVE binding names nobody',
  );
  t.true(model.publish('a3', ['r1'], 3, 'alice').ok);
  // After a restart, the stored PENDING bindings are counted against the same subjects.
  const restored = new GroupModel(g);
  const stored = ['a2', 'a3', 'b1', 'x1'].map((s) => model.binding(s)!);
  t.is(stored[0]!.by, 'alice');
  restored.restore([model.nodeRecord('o')!], stored, [], 10);
  restored.heartbeat('o', { ready: true, metrics: {} }, 10);
  t.like(restored.publish('a4', ['r1'], 10, 'alice'), { ok: false, status: 429 });
});
