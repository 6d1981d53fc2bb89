// The supervisor's policy as pure functions: from a snapshot of a group's nodes, its config, the
// clock and what is already under way, the actions to take (after the cluster-autoscaler: policy
// here, mechanism in the actor). Properties test this without threads, processes or timers.
import type { NodeGroup, RuleConfig } from '../../config/types.js';
import { compiled, ruleScope, termValues } from '../expressions/scope.js';
import { countsTowardCapacity, type NodeEvent } from '../states.js';
import type { Role, TimedState } from '../../domain/vocabulary.js';
import type { NodeFacts } from './facts.js';
import { capabilitiesOf } from '../../platforms/capabilities.js';
import { ruleKey, type BlockedCause, type ScalingTrigger } from '../../domain/scaling.js';

export type Trigger = ScalingTrigger;

export type Action =
  | { type: 'event'; nodeId: string; event: NodeEvent }
  | { type: 'create'; role: Role; region: string; count: number; trigger: Trigger; reason: string; values?: Record<string, number> }
  | { type: 'drain'; nodeId: string; role: Role; region: string; trigger: Trigger; reason: string; values?: Record<string, number> }
  | { type: 'destroy'; nodeId: string }
  | { type: 'blocked'; role: Role; region: string; cause: BlockedCause; reason: string };


/** A scale-out that failed lookups asked for, as the supervisor carried it out. */
export interface Requested {
  at: number;
  count: number;
}

export interface CapacityRequest {
  role: Role;
  region: string;
  reason: string;
}

export interface PlanInput {
  group: NodeGroup;
  nodes: readonly NodeFacts[];
  now: number;
  /** Nodes with a platform operation under way: left alone until it ends. */
  busy: ReadonlySet<string>;
  /** Capacity that lookups could not find since the last plan. */
  requests: readonly CapacityRequest[];
  /** When each rule (`region|role`) last scaled out or in, for its cooldown. */
  lastScaled?: ReadonlyMap<string, number>;
  /** Whether the rules' conditions are due (once per evaluationInterval). */
  evaluate?: boolean;
  /** Scale-outs failed lookups have had, per rule (`region|role`): their budget is per cooldown. */
  requested?: ReadonlyMap<string, readonly Requested[]>;
}

/** States in which a node is expected to heartbeat (and goes FAULT when silent). */
export const HEARTBEATING: ReadonlySet<string> = new Set(['STARTED', 'INSERVICE', 'SOFT_SUNSET', 'HARD_SUNSET']);
/** States timed by `stateTimeouts` here: those before service fault when overstayed, a destroy is retried. */
const OVERSTAYABLE: ReadonlySet<string> = new Set(['REQUESTED', 'CREATING', 'CREATED', 'STARTED', 'DESTRUCTION_REQUESTED', 'DESTROYING']);
const BEING_CREATED: ReadonlySet<string> = new Set(['REQUESTED', 'CREATING', 'CREATED', 'STARTED']);
const DRAINING: ReadonlySet<string> = new Set(['SOFT_SUNSET', 'HARD_SUNSET']);

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

/** Health: silence, overstayed states, drains that finished or ran out, faults to clear. */
export function planHealth({ group, nodes, now, busy }: PlanInput): Action[] {
  const t = group.timing;
  const managed = capabilitiesOf(group.platform.type).managed;
  const actions: Action[] = [];
  for (const n of nodes) {
    if (busy.has(n.id)) continue;
    const inState = now - n.stateSince;
    const event = (event: NodeEvent) => actions.push({ type: 'event', nodeId: n.id, event });
    if (HEARTBEATING.has(n.state) && n.lastSeen !== null && now - n.lastSeen > t.nodeTimeout) {
      event({ type: 'fault', reason: `no heartbeat for ${seconds(now - n.lastSeen)} (nodeTimeout ${seconds(t.nodeTimeout)})` });
      continue;
    }
    if (OVERSTAYABLE.has(n.state) && inState > t.stateTimeouts[n.state as TimedState]) {
      // A destroy that overstays is tried again, never faulted: a FAULT node that still
      // heartbeats would be reinstated into service, a doomed one included.
      if (n.state === 'DESTRUCTION_REQUESTED' && managed) actions.push({ type: 'destroy', nodeId: n.id });
      else if (n.state === 'DESTROYING' && managed) event({ type: 'destroy' });
      else event({ type: 'fault', reason: `${n.state} for more than ${seconds(t.stateTimeouts[n.state as TimedState])}` });
      continue;
    }
    // A draining node is empty only once it has said so: after a restart, until its first
    // heartbeat, its connections are unknown, not zero.
    const empty = n.reported && n.connections === 0;
    switch (n.state) {
      case 'SOFT_SUNSET':
        if (empty) event({ type: 'drained' });
        else if (inState > t.drainTimeout) event({ type: 'drainTimeout' });
        break;
      case 'HARD_SUNSET':
        if (empty || inState > t.stateTimeouts.HARD_SUNSET) event({ type: 'drainTimeout' });
        break;
      case 'FAULT':
        if (managed && inState > t.faultTimeout) event({ type: 'destroy' });
        break;
      case 'DOOMED':
        if (managed) event({ type: 'destroy' });
        break;
      case 'DESTRUCTION_REQUESTED':
        if (managed) actions.push({ type: 'destroy', nodeId: n.id });
        else event({ type: 'destroying' });
        break;
      case 'DESTROYING':
        if (!managed) event({ type: 'destroyed' });
        break;
    }
  }
  return actions;
}

/** The nodes a scale-in takes first: least ranked, origins with live publishers last. */
function byScaleInOrder(a: NodeFacts, b: NodeFacts): number {
  return Number(a.hasLiveStreams) - Number(b.hasLiveStreams) || a.rank - b.rank || (a.id < b.id ? -1 : 1);
}

/** A rule's nodes as capacity sees them. */
interface Tally {
  /** Nodes in service or on their way there (toward min and max). */
  counted: number;
  draining: number;
  faults: number;
  /** Whether a node is being created (a scale-out waits for it). */
  pending: boolean;
  inService: NodeFacts[];
}

function limitOf(rule: RuleConfig, inService: readonly NodeFacts[]): number {
  return typeof rule.limit === 'number' ? rule.limit : compiled(rule.limit, 'limit').evaluate(ruleScope(inService, 0));
}

/**
 * Capacity, per rule: below min → create at once; above max → drain the surplus; a lookup that
 * found no room → one increment; then, when due and not cooling down, the rule's scaleOut
 * (increment more) or scaleIn (drain one). Nodes being created count toward min and max; FAULT
 * nodes do not, and more than faultThreshold of them stop creation in that region and role.
 */
export function planCapacity({ group, nodes, now, requests, lastScaled = new Map(), evaluate = false, requested = new Map() }: PlanInput): Action[] {
  // A fleet the platform does not manage is the operator's: nothing to create or drain for capacity.
  if (!capabilitiesOf(group.platform.type).managed) return [];
  const actions: Action[] = [];
  const asked = new Map<string, CapacityRequest>();
  for (const r of requests) asked.set(ruleKey(r), r);
  const ruled = new Set(group.rules.filter((r) => group.roles[r.role]).map(ruleKey));

  // Each rule's tally, in one pass over the nodes (a fleet of 100k nodes under a dozen rules).
  const tallies = new Map<string, Tally>();
  for (const n of nodes) {
    const key = ruleKey(n);
    let tally = tallies.get(key);
    if (!tally) tallies.set(key, (tally = { counted: 0, draining: 0, faults: 0, pending: false, inService: [] }));
    if (countsTowardCapacity(n.state)) tally.counted++;
    if (DRAINING.has(n.state)) tally.draining++;
    if (n.state === 'FAULT') tally.faults++;
    if (BEING_CREATED.has(n.state)) tally.pending = true;
    if (n.state === 'INSERVICE') {
      tally.inService.push(n);
      // Nodes whose region or role is no longer configured are drained (and so retired).
      if (!ruled.has(key)) actions.push({ type: 'drain', nodeId: n.id, role: n.role, region: n.region, trigger: 'unconfigured', reason: `no rule for ${n.role} in ${n.region}` });
    }
  }

  for (const rule of group.rules) {
    if (!group.roles[rule.role]) continue;
    const key = ruleKey(rule);
    // Toward min: what serves or will (a draining node is on its way out). Toward max: every node
    // that runs, draining ones included (CONTRACT §7: only FAULT nodes do not count).
    const { counted, faults, pending, inService, draining: drainingCount } = tallies.get(key) ?? { counted: 0, draining: 0, faults: 0, pending: false, inService: [] };
    const running = counted + drainingCount;
    const draining = drainingCount > 0;
    const blocked = faults > group.timing.faultThreshold;
    const refuse = (cause: BlockedCause, reason: string) => actions.push({ type: 'blocked', role: rule.role, region: rule.region, cause, reason });
    const create = (count: number, trigger: Trigger, reason: string, values?: Record<string, number>) => {
      if (count <= 0) return;
      if (blocked) {
        refuse('faults', `${faults} nodes in FAULT (faultThreshold ${group.timing.faultThreshold}): not creating more`);
        return;
      }
      actions.push({ type: 'create', role: rule.role, region: rule.region, count, trigger, reason, ...(values ? { values } : {}) });
    };
    const drain = (victims: readonly NodeFacts[], trigger: Trigger, reason: string, values?: Record<string, number>) => {
      for (const v of victims) actions.push({ type: 'drain', nodeId: v.id, role: rule.role, region: rule.region, trigger, reason, ...(values ? { values } : {}) });
    };

    if (counted < rule.min) {
      create(Math.min(rule.min - counted, rule.max - running), 'min', `below min ${rule.min}`);
      continue;
    }
    if (counted > rule.max) {
      drain([...inService].sort(byScaleInOrder).slice(0, counted - rule.max), 'max', `above max ${rule.max}`);
      continue;
    }
    const request = asked.get(key);
    if (request && !pending) {
      // Lookups that find no room scale out at once, but within bounds: at most one increment per
      // evaluationInterval, and `requestBudget` nodes per cooldown, so that one client's burst of
      // lookups cannot buy the fleet its max (README, Scaling).
      const recent = (requested.get(key) ?? []).filter((r) => now - r.at < rule.cooldown);
      const spent = recent.reduce((sum, r) => sum + r.count, 0);
      const last = recent.reduce((latest, r) => Math.max(latest, r.at), -Infinity);
      if (running >= rule.max) refuse('max', `lookups found no room, and the rule is at its max (${rule.max})`);
      else if (spent >= rule.requestBudget) {
        refuse('budget', `lookups found no room, and lookup-driven scale-out has added ${spent} node${spent === 1 ? '' : 's'} within the cooldown (requestBudget ${rule.requestBudget})`);
      } else if (now - last >= group.timing.evaluationInterval) {
        create(Math.min(rule.increment, rule.requestBudget - spent, rule.max - running), 'request', request.reason);
        continue;
      }
    }
    const cooling = now - (lastScaled.get(key) ?? -Infinity) < rule.cooldown;
    if (!evaluate || cooling || (!rule.scaleOut && !rule.scaleIn)) continue;
    // The aggregates wait for every node in service to have reported since a restart: a node
    // not heard from yet would count as idle and could be drained under its viewers.
    if (inService.some((n) => !n.reported)) continue;
    const scope = ruleScope(inService, limitOf(rule, inService));
    if (rule.scaleOut) {
      const out = compiled(rule.scaleOut, 'condition');
      if (out.evaluate(scope)) {
        if (!pending && running < rule.max) create(Math.min(rule.increment, rule.max - running), 'scaleOut', rule.scaleOut, { ...termValues(out, scope), limit: scope.limit });
        continue;
      }
    }
    if (rule.scaleIn) {
      const inExpr = compiled(rule.scaleIn, 'condition');
      // Scaling stops where faults pile up (faultThreshold): in as well as out.
      if (!blocked && counted > rule.min && !pending && !draining && inService.length > 0 && inExpr.evaluate(scope)) {
        drain([...inService].sort(byScaleInOrder).slice(0, 1), 'scaleIn', rule.scaleIn, { ...termValues(inExpr, scope), limit: scope.limit });
      }
    }
  }
  return actions;
}

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

/** What the supervisor needs back from a group's plan: no more than it acts on. */
export interface GroupPlan {
  actions: Action[];
  /** How many nodes the group has (a group being deleted is done when none are left). */
  nodes: number;
  /** The facts of the nodes that `destroy` actions name: their platform needs the details. */
  destroying: NodeFacts[];
  /** The earliest time a node could overstay its silence: the supervisor wakes then, not a tick later. */
  deadline: number;
}

/**
 * The plan with what carrying it out takes. The group's actor runs this beside its nodes, so that
 * the actions cross the thread and not a snapshot of every node (100k nodes took 0.4 s to clone).
 */
export function planGroup(input: PlanInput & { retiring?: boolean }): GroupPlan {
  const actions = plan(input);
  const destroyed = new Set(actions.flatMap((a) => (a.type === 'destroy' ? [a.nodeId] : [])));
  let deadline = Infinity;
  for (const n of input.nodes) {
    if (n.lastSeen !== null && HEARTBEATING.has(n.state)) deadline = Math.min(deadline, n.lastSeen + input.group.timing.nodeTimeout + 1);
  }
  return { actions, nodes: input.nodes.length, destroying: input.nodes.filter((n) => destroyed.has(n.id)), deadline };
}
