// The origin → relay → edge tree under random joins, failures, drains, removals and lookups.
import test from 'ava';
import fc from 'fast-check';
import { SERVING as SERVING_STATES } from '../../src/policy/states.js';
import { GroupModel } from '../../src/model/group-model.js';
import type { Role } from '../../src/domain/vocabulary.js';
import { parsedGroup, staticGroup } from '../helpers/fixtures.js';

const REGIONS = ['r1', 'r2'];
const ROLES: Role[] = ['origin', 'relay', 'edge'];
const PARENT: Record<string, Role> = { relay: 'origin', edge: 'relay' };

const group = parsedGroup(
  staticGroup({
    regions: REGIONS,
    nodes: [{ id: 'seed', role: 'origin', region: 'r1' }],
    roles: { origin: {}, relay: { parentRole: 'origin' }, edge: { parentRole: 'relay' } },
    rules: REGIONS.flatMap((region) => ROLES.map((role) => ({ region, role, min: 0, max: 50, limit: 5 }))),
  }),
);

type Op =
  | { op: 'join'; role: Role; region: string }
  | { op: 'fault' | 'drain' | 'remove' | 'back'; node: number }
  | { op: 'publish' | 'subscribe'; stream: number; order: number }
  | { op: 'load'; node: number; viewers: number; stream: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ op: fc.constant('join' as const), role: fc.constantFrom(...ROLES), region: fc.constantFrom(...REGIONS) }) },
  fc.record({ op: fc.constantFrom('fault' as const, 'drain' as const, 'remove' as const, 'back' as const), node: fc.nat(30) }),
  { weight: 2, arbitrary: fc.record({ op: fc.constantFrom('publish' as const, 'subscribe' as const), stream: fc.nat(5), order: fc.nat(1) }) },
  fc.record({ op: fc.constant('load' as const), node: fc.nat(30), viewers: fc.nat(3), stream: fc.nat(5) }),
);

test('the tree stays a tree: right parent roles, serving parents, no cycles, no needless orphans, relays never handed out', (t) => {
  fc.assert(
    fc.property(fc.array(op, { maxLength: 80 }), fc.integer(), (ops, seed) => {
      let x = seed >>> 0 || 1;
      const model = new GroupModel(group, () => (x = (x * 1103515245 + 12345) >>> 0) / 2 ** 32);
      const ids: string[] = [];
      let now = 0;
      for (const o of ops) {
        now += 10;
        const id = (n: number) => ids[n % Math.max(1, ids.length)];
        if (o.op === 'join') {
          const nodeId = `n${ids.length}`;
          ids.push(nodeId);
          model.addNode({ id: nodeId, role: o.role, region: o.region, platform: { type: 'static', address: '10.0.0.1' }, state: 'CREATED' }, now);
          model.heartbeat(nodeId, { ready: true, metrics: {} }, now);
        } else if (o.op === 'load') {
          const target = id(o.node);
          if (target && model.hasNode(target))
            model.heartbeat(target, { ready: true, metrics: { 'connections.subscriber': o.viewers }, streams: o.viewers ? [{ name: `s${o.stream}`, subscribers: o.viewers }] : [] }, now);
        } else if (o.op === 'publish' || o.op === 'subscribe') {
          const order = o.order ? ['r2', 'r1'] : ['r1', 'r2'];
          const r = o.op === 'publish' ? model.publish(`s${o.stream}`, order, now) : model.subscribe(`s${o.stream}`, order, now);
          if (r.ok && r.node.role === 'relay') return false;
          if (r.ok && o.op === 'subscribe' && r.node.role !== 'edge') return false;
        } else {
          const target = id((o as { node: number }).node);
          if (!target || !model.hasNode(target)) continue;
          if (o.op === 'fault') model.applyNodeEvent(target, { type: 'fault', reason: 'x' }, now);
          else if (o.op === 'drain') model.applyNodeEvent(target, { type: 'drain' }, now);
          else if (o.op === 'back') model.heartbeat(target, { ready: true, metrics: {} }, now);
          else for (const e of ['destroy', 'destroying', 'destroyed'] as const) model.applyNodeEvent(target, { type: e }, now);
        }
        model.takeEffects();
        model.tick(now);
        model.takeEffects();

        const nodes = model.nodeViews(undefined, 10_000);
        const byId = new Map(nodes.map((n) => [n.id, n]));
        const hasRoot = (n: (typeof nodes)[number]): boolean => {
          let current = n;
          for (let depth = 0; depth < 4; depth++) {
            if (current.role === 'origin') return SERVING_STATES.has(current.state);
            const p = current.parent ? byId.get(current.parent) : undefined;
            if (!p || !SERVING_STATES.has(p.state)) return false;
            current = p;
          }
          return false;
        };
        for (const n of nodes) {
          if (n.role === 'origin' && n.parent !== null) return false;
          if (n.parent === null) continue;
          const p = byId.get(n.parent);
          if (!p || p.role !== PARENT[n.role]) return false;
          if (n.state === 'INSERVICE' && !SERVING_STATES.has(p.state)) return false;
          // No cycles: parents lead to an origin in at most two steps.
          let steps = 0;
          for (let c: typeof n | undefined = n; c?.parent; c = byId.get(c.parent)) if (++steps > 2) return false;
        }
        // A child in service without a parent only while no parent could take it.
        for (const n of nodes) {
          if (n.role === 'origin' || n.state !== 'INSERVICE' || n.parent !== null) continue;
          const eligible = nodes.some((p) => p.role === PARENT[n.role] && p.state === 'INSERVICE' && hasRoot(p));
          if (eligible) return false;
        }
      }
      return true;
    }),
    { numRuns: Number(process.env.TREE_RUNS ?? 300) },
  );
  t.pass();
});
