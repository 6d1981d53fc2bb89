// The supervisor's policy as one pure function: from a snapshot of a group's nodes, its config,
// the clock and what is already under way, the actions to take. The supervisor actor carries
// them out (mechanism); properties test this without threads, processes or timers.
import type { NodeGroup } from '../../src/config/types.js';
import { countsTowardCapacity, type NodeEvent } from '../../src/domain/states.js';
import type { Role, TimedState } from '../../src/domain/vocabulary.js';
import type { NodeFacts } from '../group/model.js';

export type Action =
  | { type: 'event'; nodeId: string; event: NodeEvent }
  | { type: 'create'; role: Role; region: string; count: number; reason: string }
  | { type: 'destroy'; nodeId: string }
  | { type: 'blocked'; role: Role; region: string; reason: string };

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
}

/** States in which a node is expected to heartbeat. */
const HEARTBEATING: ReadonlySet<string> = new Set(['STARTED', 'INSERVICE', 'SOFT_SUNSET', 'HARD_SUNSET']);
const FAULT_ON_TIMEOUT: ReadonlySet<string> = new Set(['REQUESTED', 'CREATING', 'CREATED', 'STARTED', 'DESTRUCTION_REQUESTED', 'DESTROYING']);
const BEING_CREATED: ReadonlySet<string> = new Set(['REQUESTED', 'CREATING', 'CREATED', 'STARTED']);

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

/** Health: silence, overstayed states, drains that finished or ran out, faults to clear. */
export function planHealth({ group, nodes, now, busy }: PlanInput): Action[] {
  const t = group.timing;
  const managed = group.platform.type !== 'static';
  const actions: Action[] = [];
  for (const n of nodes) {
    if (busy.has(n.id)) continue;
    const inState = now - n.stateSince;
    const event = (event: NodeEvent) => actions.push({ type: 'event', nodeId: n.id, event });
    if (HEARTBEATING.has(n.state) && n.lastSeen !== null && now - n.lastSeen > t.nodeTimeout) {
      event({ type: 'fault', reason: `no heartbeat for ${seconds(now - n.lastSeen)} (nodeTimeout ${seconds(t.nodeTimeout)})` });
      continue;
    }
    if (FAULT_ON_TIMEOUT.has(n.state) && inState > t.stateTimeouts[n.state as TimedState]) {
      if (n.state === 'DESTRUCTION_REQUESTED' && managed) actions.push({ type: 'destroy', nodeId: n.id });
      else event({ type: 'fault', reason: `${n.state} for more than ${seconds(t.stateTimeouts[n.state as TimedState])}` });
      continue;
    }
    switch (n.state) {
      case 'SOFT_SUNSET':
        if (n.connections === 0) event({ type: 'drained' });
        else if (inState > t.drainTimeout) event({ type: 'drainTimeout' });
        break;
      case 'HARD_SUNSET':
        if (n.connections === 0 || inState > t.stateTimeouts.HARD_SUNSET) event({ type: 'drainTimeout' });
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

/** Capacity: every rule at its min at once; lookups that found no room get `increment` more, up to max. */
export function planCapacity({ group, nodes, requests }: PlanInput): Action[] {
  if (group.platform.type === 'static') return [];
  const actions: Action[] = [];
  const asked = new Map<string, CapacityRequest>();
  for (const r of requests) asked.set(`${r.region}|${r.role}`, r);
  for (const rule of group.rules) {
    const here = nodes.filter((n) => n.region === rule.region && n.role === rule.role);
    const counted = here.filter((n) => countsTowardCapacity(n.state)).length;
    const faults = here.filter((n) => n.state === 'FAULT').length;
    const want = Math.min(rule.max, Math.max(rule.min, counted));
    const request = asked.get(`${rule.region}|${rule.role}`);
    const pending = here.some((n) => BEING_CREATED.has(n.state));
    let count = want - counted;
    let reason = `below min ${rule.min}`;
    if (count <= 0 && request && !pending && counted < rule.max) {
      count = Math.min(rule.increment, rule.max - counted);
      reason = request.reason;
    }
    if (count <= 0) continue;
    if (faults > group.timing.faultThreshold) {
      actions.push({ type: 'blocked', role: rule.role, region: rule.region, reason: `${faults} nodes in FAULT (faultThreshold ${group.timing.faultThreshold}): not creating more` });
      continue;
    }
    actions.push({ type: 'create', role: rule.role, region: rule.region, count, reason });
  }
  return actions;
}

export function plan(input: PlanInput): Action[] {
  return [...planHealth(input), ...planCapacity(input)];
}
