import test from 'ava';
import fc from 'fast-check';
import { transition, type NodeEvent } from '../../src/policy/states.js';
import { NODE_STATES, type NodeState } from '../../src/domain/vocabulary.js';

const event: fc.Arbitrary<NodeEvent> = fc.oneof(
  fc.constant({ type: 'provision' as const }),
  fc.constant({ type: 'created' as const }),
  fc.record(
    { type: fc.constant('heartbeat' as const), ready: fc.boolean(), autoReinstate: fc.boolean(), resume: fc.constantFrom('SOFT_SUNSET' as const, 'HARD_SUNSET' as const) },
    { requiredKeys: ['type', 'ready', 'autoReinstate'] },
  ),
  fc.record({ type: fc.constant('fault' as const), reason: fc.constant('test') }),
  fc.constant({ type: 'drain' as const }),
  fc.constant({ type: 'drained' as const }),
  fc.constant({ type: 'drainTimeout' as const }),
  fc.constant({ type: 'doom' as const }),
  fc.constant({ type: 'destroy' as const }),
  fc.constant({ type: 'destroying' as const }),
  fc.constant({ type: 'destroyed' as const }),
);

test('the happy path runs from REQUESTED to removal', (t) => {
  const steps: Array<[NodeEvent, NodeState | null]> = [
    [{ type: 'provision' }, 'CREATING'],
    [{ type: 'created' }, 'CREATED'],
    [{ type: 'heartbeat', ready: false, autoReinstate: true }, 'STARTED'],
    [{ type: 'heartbeat', ready: true, autoReinstate: true }, 'INSERVICE'],
    [{ type: 'drain' }, 'SOFT_SUNSET'],
    [{ type: 'drainTimeout' }, 'HARD_SUNSET'],
    [{ type: 'drained' }, 'DESTRUCTION_REQUESTED'],
    [{ type: 'destroying' }, 'DESTROYING'],
    [{ type: 'destroyed' }, null],
  ];
  let state: NodeState = 'REQUESTED';
  for (const [e, expected] of steps) {
    const r = transition(state, e);
    t.true(r.ok, `${e.type} from ${state}`);
    if (r.ok) {
      t.is(r.state, expected);
      if (r.state) state = r.state;
    }
  }
});

test('every move lands on a known state, and refusals say why', (t) => {
  fc.assert(
    fc.property(fc.constantFrom(...NODE_STATES), event, (state, e) => {
      const r = transition(state, e);
      if (r.ok) return r.state === null || NODE_STATES.includes(r.state);
      return r.reason.includes(e.type) && r.reason.includes(state);
    }),
  );
  t.pass();
});

test('only a ready heartbeat brings a node into service', (t) => {
  fc.assert(
    fc.property(fc.constantFrom(...NODE_STATES.filter((s) => s !== 'INSERVICE')), event, (state, e) => {
      const r = transition(state, e);
      // A FAULT node that was draining goes back to its drain, ready or not.
      return !(r.ok && r.state === 'INSERVICE') || (e.type === 'heartbeat' && e.ready && !(state === 'FAULT' && e.resume));
    }),
  );
  t.pass();
});

test('a record is only removed from DESTROYING or DESTRUCTION_REQUESTED, and only by destroyed', (t) => {
  fc.assert(
    fc.property(fc.constantFrom(...NODE_STATES), event, (state, e) => {
      const r = transition(state, e);
      return !(r.ok && r.state === null) || (e.type === 'destroyed' && (state === 'DESTROYING' || state === 'DESTRUCTION_REQUESTED'));
    }),
  );
  t.pass();
});

test('a faulty node comes back only when autoReinstate is on', (t) => {
  t.deepEqual(transition('FAULT', { type: 'heartbeat', ready: true, autoReinstate: false }), { ok: true, state: 'FAULT' });
  t.deepEqual(transition('FAULT', { type: 'heartbeat', ready: true, autoReinstate: true }), { ok: true, state: 'INSERVICE' });
  t.deepEqual(transition('FAULT', { type: 'heartbeat', ready: false, autoReinstate: true }), { ok: true, state: 'STARTED' });
});

test('a node that faulted while draining drains on when its heartbeats come back, never serving again', (t) => {
  for (const resume of ['SOFT_SUNSET', 'HARD_SUNSET'] as const) {
    for (const ready of [true, false]) {
      t.deepEqual(transition('FAULT', { type: 'heartbeat', ready, autoReinstate: true, resume }), { ok: true, state: resume });
      t.deepEqual(transition('FAULT', { type: 'heartbeat', ready, autoReinstate: false, resume }), { ok: true, state: 'FAULT' });
    }
  }
});

test('random event sequences never leave the machine in an unknown state', (t) => {
  fc.assert(
    fc.property(fc.array(event, { maxLength: 60 }), (events) => {
      let state: NodeState | null = 'REQUESTED';
      for (const e of events) {
        if (state === null) break;
        const r = transition(state, e);
        if (r.ok) state = r.state;
      }
      return state === null || NODE_STATES.includes(state);
    }),
  );
  t.pass();
});

test('a node that has not started goes to STARTED on its first heartbeat, ready or not (docs/nodes.md)', (t) => {
  for (const state of ['REQUESTED', 'CREATING', 'CREATED'] as const) {
    for (const ready of [true, false]) t.deepEqual(transition(state, { type: 'heartbeat', ready, autoReinstate: true }), { ok: true, state: 'STARTED' });
  }
});

test('a destroy that overstayed is asked for again; nothing in teardown goes back toward service', (t) => {
  t.deepEqual(transition('DESTROYING', { type: 'destroy' }), { ok: true, state: 'DESTRUCTION_REQUESTED' });
  for (const state of ['DESTRUCTION_REQUESTED', 'DESTROYING'] as const) {
    for (const ready of [true, false]) t.deepEqual(transition(state, { type: 'heartbeat', ready, autoReinstate: true }), { ok: true, state });
  }
});
