// The node state machine of docs/nodes.md as one pure function, so that every caller (heartbeats,
// the supervisor's plans, admin calls, the platforms) is held to the same legal moves.
import type { NodeState } from '../domain/vocabulary.js';

export type NodeEvent =
  /** The platform has started creating the node. */
  | { type: 'provision' }
  /** The platform reports the node exists. */
  | { type: 'created' }
  /**
   * The node agent posted an event; `ready` is its own readiness flag. `resume` is the draining
   * state a FAULT node was in when it went silent: a drain (scale-in or an admin's) survives the fault.
   */
  | { type: 'heartbeat'; ready: boolean; autoReinstate: boolean; resume?: 'SOFT_SUNSET' | 'HARD_SUNSET' }
  /** No heartbeat for nodeTimeout, or a state overstayed its timeout, or the platform failed. */
  | { type: 'fault'; reason: string }
  /** Stop new assignments and retire when empty (scale-in or an admin's drain). */
  | { type: 'drain' }
  /** A draining node has no connections left. */
  | { type: 'drained' }
  /** The drain or hard-sunset period is over. */
  | { type: 'drainTimeout' }
  /** An admin condemns the node. */
  | { type: 'doom' }
  /** Destroy a node that is faulty, doomed or done draining (or retry a destroy that overstayed). */
  | { type: 'destroy' }
  /** The platform has started destroying the node. */
  | { type: 'destroying' }
  /** The platform reports the node gone: the record is removed. */
  | { type: 'destroyed' };

export type Transition = { ok: true; state: NodeState | null } | { ok: false; reason: string };

const refuse = (state: NodeState, event: NodeEvent): Transition => ({
  ok: false,
  reason: `event '${event.type}' is not allowed in state ${state}`,
});
const to = (state: NodeState | null): Transition => ({ ok: true, state });

const BEFORE_START: ReadonlySet<NodeState> = new Set(['REQUESTED', 'CREATING', 'CREATED']);
const TEARDOWN: ReadonlySet<NodeState> = new Set(['DESTRUCTION_REQUESTED', 'DESTROYING']);

/**
 * The next state after `event` in `state`, or a refusal. `null` means the node is removed.
 * A move to the same state is legal and means "nothing changes".
 */
export function transition(state: NodeState, event: NodeEvent): Transition {
  switch (event.type) {
    case 'provision':
      return state === 'REQUESTED' ? to('CREATING') : refuse(state, event);
    case 'created':
      // A fast node can post its first heartbeat before its platform reports it created.
      if (state === 'REQUESTED' || state === 'CREATING') return to('CREATED');
      if (state === 'STARTED' || state === 'INSERVICE') return to(state);
      return refuse(state, event);
    case 'heartbeat':
      // docs/nodes.md: the first event moves a node to STARTED; readiness (this heartbeat's, if it
      // says so, applied again by the caller) moves it on to INSERVICE.
      if (BEFORE_START.has(state)) return to('STARTED');
      if (state === 'STARTED') return to(event.ready ? 'INSERVICE' : 'STARTED');
      if (state === 'INSERVICE') return to(event.ready ? 'INSERVICE' : 'STARTED');
      if (state === 'FAULT') {
        if (!event.autoReinstate) return to('FAULT');
        if (event.resume) return to(event.resume);
        return to(event.ready ? 'INSERVICE' : 'STARTED');
      }
      // Draining, doomed and departing nodes keep their state; the reply tells them to drain.
      return to(state);
    case 'fault':
      if (state === 'FAULT' || state === 'DOOMED') return to(state);
      return to('FAULT');
    case 'drain':
      if (state === 'INSERVICE' || state === 'STARTED') return to('SOFT_SUNSET');
      if (state === 'SOFT_SUNSET' || state === 'HARD_SUNSET') return to(state);
      return refuse(state, event);
    case 'drained':
      if (state === 'SOFT_SUNSET' || state === 'HARD_SUNSET') return to('DESTRUCTION_REQUESTED');
      return refuse(state, event);
    case 'drainTimeout':
      if (state === 'SOFT_SUNSET') return to('HARD_SUNSET');
      if (state === 'HARD_SUNSET') return to('DESTRUCTION_REQUESTED');
      return refuse(state, event);
    case 'doom':
      if (TEARDOWN.has(state)) return refuse(state, event);
      return to('DOOMED');
    case 'destroy':
      // From DESTROYING: a destroy that did not finish is asked for again (never FAULT, from
      // which a node that still heartbeats would be reinstated, a doomed one included).
      if (state === 'DESTRUCTION_REQUESTED') return to(state);
      return to('DESTRUCTION_REQUESTED');
    case 'destroying':
      if (state === 'DESTRUCTION_REQUESTED' || state === 'DESTROYING') return to('DESTROYING');
      return refuse(state, event);
    case 'destroyed':
      if (state === 'DESTROYING' || state === 'DESTRUCTION_REQUESTED') return to(null);
      return refuse(state, event);
  }
}

/** States that count toward a rule's min and max (docs/scaling.md: FAULT does not; nodes being created do). */
export const countsTowardCapacity = (state: NodeState): boolean => state === 'REQUESTED' || state === 'CREATING' || state === 'CREATED' || state === 'STARTED' || state === 'INSERVICE';

// ---- the states, by what they mean to the rest of the system ----------------------------------

/** A node still carries media: a parent in one of these still feeds its children. */
export const SERVING: ReadonlySet<NodeState> = new Set(['INSERVICE', 'SOFT_SUNSET', 'HARD_SUNSET']);
/** A drain under way: no new assignments, the node retires when empty or when its time is up. */
export const DRAINING: ReadonlySet<NodeState> = new Set(['SOFT_SUNSET', 'HARD_SUNSET']);
/** The heartbeat reply tells the node to drain: it is draining, condemned or being destroyed. */
export const TOLD_TO_DRAIN: ReadonlySet<NodeState> = new Set(['SOFT_SUNSET', 'HARD_SUNSET', 'DOOMED', 'DESTRUCTION_REQUESTED', 'DESTROYING']);
/** Expected to heartbeat: silence past nodeTimeout is a FAULT. */
export const HEARTBEATING: ReadonlySet<NodeState> = new Set(['STARTED', 'INSERVICE', 'SOFT_SUNSET', 'HARD_SUNSET']);
/** On the way into service: a scale-out waits for these. */
export const BEING_CREATED: ReadonlySet<NodeState> = new Set(['REQUESTED', 'CREATING', 'CREATED', 'STARTED']);
