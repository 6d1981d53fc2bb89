// Properties of the supervisor's policy over random snapshots (docs/nodes.md, docs/scaling.md).
import test from 'ava';
import fc from 'fast-check';
import type { NodeGroup } from '../../src/config/types.js';
import { countsTowardCapacity, transition } from '../../src/policy/states.js';
import { NODE_STATES, type NodeState } from '../../src/domain/vocabulary.js';
import type { NodeFacts } from '../../src/policy/scaling/facts.js';
import { plan, planCapacity, planHealth, type Action } from '../../src/policy/scaling/plan.js';
import { localPlatformGroup, nodeFacts, parsedGroup } from '../helpers/fixtures.js';

const NOW = 10_000_000;
const CONDITIONS = ['avg(connections.subscriber) > 0.6 * limit', 'avg(connections.subscriber) < 20', 'count() > 0', 'max(cpu.load) > 0.8 || sum(connections.subscriber) > 300', 'false'];

interface Snapshot {
  group: NodeGroup;
  nodes: NodeFacts[];
  lastScaled: Map<string, number>;
  evaluate: boolean;
  requests: Array<{ role: 'edge'; region: string; reason: string }>;
}

const snapshot: fc.Arbitrary<Snapshot> = fc
  .record({
    min: fc.integer({ min: 0, max: 3 }),
    extra: fc.integer({ min: 0, max: 4 }),
    increment: fc.integer({ min: 1, max: 3 }),
    scaleOut: fc.option(fc.constantFrom(...CONDITIONS), { nil: undefined }),
    scaleIn: fc.option(fc.constantFrom(...CONDITIONS), { nil: undefined }),
    faultThreshold: fc.integer({ min: 0, max: 3 }),
    cooldownAgo: fc.option(fc.integer({ min: 0, max: 120_000 }), { nil: undefined }),
    evaluate: fc.boolean(),
    request: fc.boolean(),
    nodes: fc.array(
      fc.record({
        region: fc.constantFrom('r1', 'r2'),
        // Mostly in service, so that rules get to fire; every state now and then.
        state: fc.oneof({ weight: 3, arbitrary: fc.constant<NodeState>('INSERVICE') }, { weight: 2, arbitrary: fc.constantFrom<NodeState>(...NODE_STATES) }),
        subscribers: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 300 })),
        cpu: fc.double({ min: 0, max: 1, noNaN: true }),
        inStateMs: fc.integer({ min: 0, max: 2 * 3_600_000 }),
        silentMs: fc.integer({ min: 0, max: 60_000 }),
        live: fc.boolean(),
        // Mostly heard from; sometimes not yet since a restart.
        reported: fc.constantFrom(true, true, true, false),
      }),
      { maxLength: 14 },
    ),
  })
  .map((r) => {
    const group = parsedGroup(
      localPlatformGroup({
        rules: [
          {
            region: 'r1',
            role: 'edge',
            min: r.min,
            max: r.min + r.extra,
            increment: r.increment,
            limit: 200,
            cooldown: '60s',
            ...(r.scaleOut ? { scaleOut: r.scaleOut } : {}),
            ...(r.scaleIn ? { scaleIn: r.scaleIn } : {}),
          },
        ],
        timing: { faultThreshold: r.faultThreshold, drainTimeout: '10m' },
      }),
    );
    const nodes: NodeFacts[] = r.nodes.map((n, i) =>
      nodeFacts({
        id: `n${i}`,
        role: 'edge',
        region: n.region,
        state: n.state,
        stateSince: NOW - n.inStateMs,
        lastSeen: NOW - n.silentMs,
        reported: n.reported,
        connections: n.subscribers,
        rank: n.subscribers,
        metrics: { 'connections.subscriber': n.subscribers, 'cpu.load': n.cpu },
        hasLiveStreams: n.live,
      }),
    );
    return {
      group,
      nodes,
      lastScaled: new Map(r.cooldownAgo === undefined ? [] : [['r1|edge', NOW - r.cooldownAgo]]),
      evaluate: r.evaluate,
      requests: r.request ? [{ role: 'edge' as const, region: 'r1', reason: 'no room' }] : [],
    };
  });

const run = (s: Snapshot) => plan({ group: s.group, nodes: s.nodes, now: NOW, busy: new Set(), requests: s.requests, lastScaled: s.lastScaled, evaluate: s.evaluate });
const inRule = (s: Snapshot) => s.nodes.filter((n) => n.region === 'r1');
const created = (actions: Action[]) => actions.reduce((sum, a) => sum + (a.type === 'create' ? a.count : 0), 0);

test('never above max: nodes being created and draining count, FAULT nodes do not', (t) => {
  fc.assert(
    fc.property(snapshot, (s) => {
      const rule = s.group.rules[0]!;
      const running = inRule(s).filter((n) => countsTowardCapacity(n.state) || n.state === 'SOFT_SUNSET' || n.state === 'HARD_SUNSET').length;
      return running + created(run(s)) <= Math.max(rule.max, running);
    }),
    { numRuns: 500 },
  );
  t.pass();
});

test('never below min, except while replacing', (t) => {
  fc.assert(
    fc.property(snapshot, (s) => {
      const rule = s.group.rules[0]!;
      const counted = inRule(s).filter((n) => countsTowardCapacity(n.state)).length;
      const drains = run(s).filter((a) => a.type === 'drain' && a.region === 'r1').length;
      const faults = inRule(s).filter((n) => n.state === 'FAULT').length;
      const running = inRule(s).filter((n) => countsTowardCapacity(n.state) || n.state === 'SOFT_SUNSET' || n.state === 'HARD_SUNSET').length;
      const replacing = counted < rule.min && faults <= s.group.timing.faultThreshold;
      return counted - drains >= Math.min(rule.min, counted) && (!replacing || counted + created(run(s)) === Math.min(rule.min, counted + Math.max(0, rule.max - running)));
    }),
    { numRuns: 500 },
  );
  t.pass();
});

test('no rule-driven action during cooldown, and none between evaluations', (t) => {
  fc.assert(
    fc.property(snapshot, (s) => {
      const rule = s.group.rules[0]!;
      const since = s.lastScaled.get('r1|edge');
      const cooling = since !== undefined && NOW - since < rule.cooldown;
      const ruleDriven = run(s).filter((a) => (a.type === 'create' || a.type === 'drain') && (a.trigger === 'scaleOut' || a.trigger === 'scaleIn'));
      return cooling || !s.evaluate ? ruleDriven.length === 0 : true;
    }),
    { numRuns: 500 },
  );
  t.pass();
});

test('nodes not heard from since a restart are never judged by metrics they have not sent', (t) => {
  fc.assert(
    fc.property(snapshot, (s) => {
      const actions = run(s);
      // No rule fires on aggregates that miss a node in service.
      const unheard = inRule(s).some((n) => n.state === 'INSERVICE' && !n.reported);
      if (unheard && actions.some((a) => (a.type === 'create' || a.type === 'drain') && (a.trigger === 'scaleOut' || a.trigger === 'scaleIn'))) return false;
      // A draining node is not taken for empty before it has said so.
      for (const a of actions) {
        if (a.type !== 'event' || (a.event.type !== 'drained' && a.event.type !== 'drainTimeout')) continue;
        const n = s.nodes.find((x) => x.id === a.nodeId)!;
        const timedOut = NOW - n.stateSince > (n.state === 'SOFT_SUNSET' ? s.group.timing.drainTimeout : s.group.timing.stateTimeouts.HARD_SUNSET);
        if (!n.reported && !timedOut) return false;
      }
      return true;
    }),
    { numRuns: 500 },
  );
  t.pass();
});

test('where faults pile up past faultThreshold, the rule neither creates nor drains', (t) => {
  fc.assert(
    fc.property(snapshot, (s) => {
      const faults = inRule(s).filter((n) => n.state === 'FAULT').length;
      if (faults <= s.group.timing.faultThreshold) return true;
      return !run(s).some((a) => (a.type === 'create' && a.region === 'r1') || (a.type === 'drain' && a.region === 'r1' && a.trigger === 'scaleIn'));
    }),
    { numRuns: 500 },
  );
  t.pass();
});

test('a node with live sessions is never retired before drainTimeout', (t) => {
  fc.assert(
    fc.property(snapshot, (s) => {
      const retire = new Set(['drained', 'drainTimeout', 'destroy']);
      for (const a of planHealth({ group: s.group, nodes: s.nodes, now: NOW, busy: new Set(), requests: [] })) {
        if (a.type !== 'event' || !retire.has(a.event.type)) continue;
        const n = s.nodes.find((x) => x.id === a.nodeId)!;
        const live = n.connections > 0 && (n.state === 'INSERVICE' || n.state === 'SOFT_SUNSET');
        if (live && NOW - n.stateSince <= s.group.timing.drainTimeout) return false;
      }
      return true;
    }),
    { numRuns: 500 },
  );
  t.pass();
});

test('every transition the plan asks for is legal, and only in-service nodes are drained', (t) => {
  fc.assert(
    fc.property(snapshot, (s) => {
      for (const a of run(s)) {
        const n = s.nodes.find((x) => x.id === (a as { nodeId?: string }).nodeId);
        if (a.type === 'event' && !transition(n!.state, a.event).ok) return false;
        if (a.type === 'drain' && n!.state !== 'INSERVICE') return false;
      }
      return true;
    }),
    { numRuns: 500 },
  );
  t.pass();
});

test('a scale-out reports the values that fired it; a scale-in drains the least-ranked node, live origins last', (t) => {
  const s = {
    group: parsedGroup(
      localPlatformGroup({ rules: [{ region: 'r1', role: 'edge', min: 1, max: 5, limit: 100, scaleOut: 'avg(connections.subscriber) > 0.6 * limit', scaleIn: 'avg(connections.subscriber) < 20' }] }),
    ),
  };
  const edge = (id: string, subscribers: number, live = false): NodeFacts =>
    nodeFacts({ id, role: 'edge', stateSince: NOW - 1000, lastSeen: NOW, connections: subscribers, rank: subscribers, metrics: { 'connections.subscriber': subscribers }, hasLiveStreams: live });
  const out = planCapacity({ ...s, nodes: [edge('a', 70), edge('b', 80)], now: NOW, busy: new Set(), requests: [], evaluate: true });
  t.like(out[0], { type: 'create', trigger: 'scaleOut', count: 1, values: { 'avg(connections.subscriber)': 75, limit: 100 } });
  const inward = planCapacity({ ...s, nodes: [edge('a', 3, true), edge('b', 5), edge('c', 4)], now: NOW, busy: new Set(), requests: [], evaluate: true });
  t.like(inward[0], { type: 'drain', nodeId: 'c', trigger: 'scaleIn' });
  const cooling = planCapacity({ ...s, nodes: [edge('a', 70), edge('b', 80)], now: NOW, busy: new Set(), requests: [], evaluate: true, lastScaled: new Map([['r1|edge', NOW - 1000]]) });
  t.deepEqual(cooling, []);
  const pending = planCapacity({ ...s, nodes: [edge('a', 70), edge('b', 80), { ...edge('c', 0), state: 'CREATING' }], now: NOW, busy: new Set(), requests: [], evaluate: true });
  t.deepEqual(pending, [], 'no second scale-out while nodes of the first are still coming');
});
