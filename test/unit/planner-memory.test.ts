// The planner's memory (src/policy/scaling/memory.ts) and its place in the group model
// (src/model/planner.ts): cooldowns and the lookups' budget are remembered from what the actuator
// reports, written with the group's records, and a model restored from them plans the same.
import test from 'ava';
import fc from 'fast-check';
import type { NodeGroup } from '../../src/config/types.js';
import type { PlannerRecord } from '../../src/domain/records.js';
import { ruleKey } from '../../src/domain/scaling.js';
import { GroupModel } from '../../src/model/group-model.js';
import type { Action, BlockedAction } from '../../src/policy/scaling/actions.js';
import { afterActuation, blockedSince, emptyMemory, memoryOf, recordOf, startsCooldown, type Actuated } from '../../src/policy/scaling/memory.js';
import { localPlatformGroup, parsedGroup } from '../helpers/fixtures.js';

const ROLES = ['origin', 'edge'] as const;
const TRIGGERS = ['min', 'max', 'schedule', 'request', 'scaleOut', 'scaleIn', 'retire'] as const;

const actuated = fc.record({
  type: fc.constantFrom('create' as const, 'drain' as const),
  role: fc.constantFrom(...ROLES),
  region: fc.constantFrom('r1', 'r2'),
  trigger: fc.constantFrom(...TRIGGERS),
  count: fc.integer({ min: 1, max: 4 }),
  dt: fc.integer({ min: 0, max: 20 * 3_600_000 }),
});
const asAction = (a: typeof actuated extends fc.Arbitrary<infer T> ? T : never): Actuated =>
  a.type === 'create'
    ? { type: 'create', role: a.role, region: a.region, count: a.count, trigger: a.trigger, reason: 'test' }
    : { type: 'drain', role: a.role, region: a.region, nodeId: 'n', trigger: a.trigger, reason: 'test' };

test('property: a rule cools down from its last scale-out or scale-in, and its request budget keeps a bounded day', (t) => {
  fc.assert(
    fc.property(fc.array(actuated, { maxLength: 120 }), (steps) => {
      let memory = emptyMemory();
      let now = 0;
      const last = new Map<string, number>();
      for (const step of steps) {
        now += step.dt;
        const action = asAction(step);
        memory = afterActuation(memory, action, now);
        if (startsCooldown(action)) last.set(ruleKey(action), now);
        // The stored form carries everything: what is written is what a restart reads.
        t.deepEqual(memoryOf(recordOf(memory)), memory);
      }
      t.deepEqual(memory.lastScaled, last);
      for (const [, list] of memory.requested) {
        t.true(list.length <= 64);
        // Newest last; everything kept but the newest is younger than a day at the time it was kept.
        for (let i = 1; i < list.length; i++) t.true(list[i]!.at >= list[i - 1]!.at && list[i]!.at - list[i - 1]!.at < 86_400_000);
      }
    }),
  );
});

test('property: a blocked rule is told once while it stays blocked for the same cause, and again when it starts anew', (t) => {
  const blocked = fc.record({ role: fc.constantFrom(...ROLES), region: fc.constantFrom('r1', 'r2'), cause: fc.constantFrom('faults' as const, 'max' as const, 'budget' as const) });
  fc.assert(
    fc.property(fc.array(fc.array(blocked, { maxLength: 4 }), { maxLength: 12 }), (plans) => {
      let previous = new Set<string>();
      for (const plan of plans) {
        const rules: BlockedAction[] = plan.map((b) => ({ type: 'blocked', ...b, reason: 'test' }));
        const { blocked: now, started } = blockedSince(previous, rules);
        const keys = new Set(plan.map((b) => `${b.region}|${b.role}|${b.cause}`));
        t.deepEqual(now, keys);
        t.deepEqual(new Set(started.map((b) => `${b.region}|${b.role}|${b.cause}`)), new Set([...keys].filter((k) => !previous.has(k))));
        t.is(started.length, new Set(started.map((b) => `${b.region}|${b.role}|${b.cause}`)).size, 'each once');
        previous = now;
      }
    }),
  );
});

/** A local group with one origin rule: lookups that find no room ask for one more origin. */
function localGroup(): NodeGroup {
  return parsedGroup(localPlatformGroup({ regions: ['r1'], rules: [{ region: 'r1', role: 'origin', min: 0, max: 3, limit: 1, cooldown: '60s', scaleOut: 'avg(connections.publisher) >= limit' }] }));
}

/** A model restored from `record`, with `origins` full origins in service. */
function withFullOrigins(record?: PlannerRecord, origins = 1): GroupModel {
  const model = new GroupModel(localGroup());
  model.restore([], [], [], 0, record);
  for (let i = 1; i <= origins; i++) {
    model.addNode({ id: `o${i}`, role: 'origin', region: 'r1', platform: { type: 'local', address: `127.0.0.${i + 1}` }, state: 'CREATED' }, 0);
    model.heartbeat(`o${i}`, { ready: true, metrics: { 'connections.publisher': 1 } }, 0);
  }
  model.takeEffects();
  return model;
}

const planAt = (model: GroupModel, now: number) => model.plan({ now, busy: new Set(), retiring: false }).actions;

test("a lookup's ask for capacity waits in the group for the next plan; the scale-out's cooldown is written with the group's records and survives a restart", (t) => {
  const model = withFullOrigins();
  t.false(model.capacityAsked);
  t.like(model.publish('cam', ['r1'], 1_000), { ok: false, code: 'NO_CAPACITY' });
  t.true(model.capacityAsked, 'asked, without leaving the group');
  const planned = planAt(model, 1_000);
  t.false(model.capacityAsked, 'the plan took it');
  const create = planned.find((a) => a.type === 'create');
  t.like(create, { type: 'create', role: 'origin', region: 'r1', trigger: 'request' });
  model.takeEffects();

  model.actuated(create as Actuated, 1_000);
  const { writes, events } = model.takeEffects();
  t.like(events, [{ type: 'scaling.action', action: 'create', trigger: 'request', role: 'origin' }]);
  const write = writes.find((w) => w.kind === 'planner');
  t.truthy(write, 'the memory is one of the group’s writes');
  const record = write!.value as PlannerRecord;
  t.deepEqual(record.lastScaled, [['r1|origin', 1_000]]);

  // A restarted actor (or a new owner) reads the record: the rule is cooling down, nothing more is made.
  const restarted = withFullOrigins(record);
  t.false(
    planAt(restarted, 30_000).some((a) => a.type === 'create' && a.trigger === 'scaleOut'),
    'no scale-out inside the cooldown after a restart',
  );
  const forgetful = withFullOrigins();
  t.true(
    planAt(forgetful, 30_000).some((a) => a.type === 'create' && a.trigger === 'scaleOut'),
    'without the memory it would scale out again (the test can fail)',
  );
});

test('a blocked rule is told once as an event of the group, and remembered across a restart', (t) => {
  // Three full origins (max 3): a lookup's ask for more is blocked at max.
  const model = withFullOrigins(undefined, 3);
  const askAndPlan = (m: GroupModel, now: number) => {
    t.like(m.publish(`cam${now}`, ['r1'], now), { ok: false, code: 'NO_CAPACITY' });
    const carried: readonly Action[] = planAt(m, now);
    t.false(
      carried.some((a) => a.type === 'blocked'),
      'the blocked rule is told, never handed to the supervisor',
    );
    return m.takeEffects();
  };
  const blocked = (e: { events: Array<{ type: string }> }) => e.events.filter((x) => x.type === 'scaling.blocked');
  const first = askAndPlan(model, 1_000);
  t.like(blocked(first), [{ type: 'scaling.blocked', role: 'origin', region: 'r1', cause: 'max' }]);
  t.deepEqual(blocked(askAndPlan(model, 2_000)), [], 'not told again while it stays blocked');
  const record = first.writes.find((w) => w.kind === 'planner')!.value as PlannerRecord;
  t.deepEqual(blocked(askAndPlan(withFullOrigins(record, 3), 3_000)), [], 'a restarted group does not tell it again');
  t.is(blocked(askAndPlan(withFullOrigins(undefined, 3), 3_000)).length, 1, 'without the memory it would (the test can fail)');
});
