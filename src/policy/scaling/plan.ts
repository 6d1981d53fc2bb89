// The supervisor's policy as pure functions: from a snapshot of a group's nodes, its config, the
// clock and what is already under way, the actions to take (after the cluster-autoscaler: policy
// here, mechanism in actors/supervisor). Properties test this without threads, processes or timers.
import type { Action, ActuatorAction, BlockedAction, PlanInput } from './actions.js';
import { planCapacity } from './capacity.js';
import type { NodeFacts } from './facts.js';
import { planHealth } from './health.js';
import { HEARTBEATING } from '../states.js';

export type { Action, ActuatorAction, BlockedAction, CapacityRequest, PlanInput, Trigger } from './actions.js';
export { planCapacity } from './capacity.js';
export { planHealth } from './health.js';

/** A group being deleted: drain what serves, destroy the rest; health does the remainder. */
export function planRetirement({ nodes, busy }: PlanInput): Action[] {
  const actions: Action[] = [];
  for (const n of nodes) {
    if (busy.has(n.id)) continue;
    if (n.state === 'INSERVICE' || n.state === 'STARTED') {
      actions.push({ type: 'drain', nodeId: n.id, role: n.role, region: n.region, trigger: 'retire', reason: 'the node group is being deleted' });
    } else if (n.state === 'REQUESTED' || n.state === 'CREATING' || n.state === 'CREATED' || n.state === 'FAULT' || n.state === 'DOOMED') {
      actions.push({ type: 'event', nodeId: n.id, event: { type: 'destroy' } });
    }
  }
  return actions;
}

export function plan(input: PlanInput & { retiring?: boolean }): Action[] {
  return [...planHealth(input), ...(input.retiring ? planRetirement(input) : planCapacity(input))];
}

/**
 * What the supervisor needs back from a group's plan: no more than it acts on. Its actions leave
 * blocked rules out by their type: those are the planner's to tell, never the actuator's to do.
 */
export interface GroupPlan {
  actions: ActuatorAction[];
  /** How many nodes the group has (a group being deleted is done when none are left). */
  nodes: number;
  /** The facts of the nodes that `destroy` actions name: their platform needs the details. */
  destroying: NodeFacts[];
  /** The earliest time a node could overstay its silence: the supervisor wakes then, not a tick later. */
  deadline: number;
}

/** A group's plan as made: what the supervisor carries out, and apart from it the rules that are blocked. */
export interface PlannedGroup extends GroupPlan {
  blocked: BlockedAction[];
}

/**
 * The plan with what carrying it out takes. The group's actor runs this beside its nodes, so that
 * the actions cross the thread and not a snapshot of every node (100k nodes took 0.4 s to clone).
 * Blocked rules are set apart here, once: the planner tells them, the supervisor never sees them.
 */
export function planGroup(input: PlanInput & { retiring?: boolean }): PlannedGroup {
  const actions: ActuatorAction[] = [];
  const blocked: BlockedAction[] = [];
  for (const a of plan(input)) {
    if (a.type === 'blocked') blocked.push(a);
    else actions.push(a);
  }
  const destroyed = new Set(actions.flatMap((a) => (a.type === 'destroy' ? [a.nodeId] : [])));
  let deadline = Infinity;
  for (const n of input.nodes) {
    if (n.lastSeen !== null && HEARTBEATING.has(n.state)) deadline = Math.min(deadline, n.lastSeen + input.group.timing.nodeTimeout + 1);
  }
  return { actions, blocked, nodes: input.nodes.length, destroying: input.nodes.filter((n) => destroyed.has(n.id)), deadline };
}
