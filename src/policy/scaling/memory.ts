// What the planner remembers of a node group between plans: when each rule last scaled (its
// cooldown), the scale-outs failed lookups have had (their budget), when the rules' conditions
// were last evaluated, and which rules were blocked at the last plan (a scaling.blocked event when
// one starts, not at every plan). The group's actor keeps it with the group's records (LMDB, and in
// cluster mode the replicated log and its snapshots), so a restart or a new owner goes on from it.
// The supervisor only carries out actions and reports their outcome here (afterActuation), as the
// Kubernetes cluster-autoscaler's actuator reports to its planner. Pure: every function takes `now`.
import type { PlannerRecord, Requested } from '../../domain/records.js';
import { ruleKey } from '../../domain/scaling.js';
import type { Action, BlockedAction } from './actions.js';

export interface PlannerMemory {
  /** When each rule (`region|role`) last scaled out or in. */
  lastScaled: Map<string, number>;
  /** The scale-outs failed lookups have had per rule, newest last. */
  requested: Map<string, Requested[]>;
  /** When the rules' conditions were last evaluated (0: never). */
  lastEvaluated: number;
  /** The rules blocked at the last plan, as `region|role|cause`. */
  blocked: Set<string>;
}

/** The memory as stored: plain arrays, which every encoder and the replicated log carry as they are. */
export type { PlannerRecord };

/** The one key of a group's planner record in its table. */
export const PLANNER_KEY = 'memory';

/** A day of request budgets is kept (longer than any sensible cooldown), at most this many per rule. */
const REQUESTS_KEPT_MS = 86_400_000;
const REQUESTS_KEPT = 64;

export function emptyMemory(): PlannerMemory {
  return { lastScaled: new Map(), requested: new Map(), lastEvaluated: 0, blocked: new Set() };
}

export function memoryOf(record: PlannerRecord | undefined): PlannerMemory {
  if (!record) return emptyMemory();
  return {
    lastScaled: new Map(record.lastScaled),
    requested: new Map(record.requested),
    lastEvaluated: record.lastEvaluated,
    blocked: new Set(record.blocked),
  };
}

export function recordOf(memory: PlannerMemory): PlannerRecord {
  return {
    lastScaled: [...memory.lastScaled],
    requested: [...memory.requested],
    lastEvaluated: memory.lastEvaluated,
    blocked: [...memory.blocked],
  };
}

/** Whether the rules' conditions are due: once per evaluation interval. */
export function evaluationDue(memory: PlannerMemory, now: number, intervalMs: number): boolean {
  return now - memory.lastEvaluated >= intervalMs;
}

/**
 * The blocked rules of a plan against those of the last: the set to remember, and the ones that
 * start now (each told once, until it is no longer blocked for that cause).
 */
export function blockedSince(previous: ReadonlySet<string>, rules: readonly BlockedAction[]): { blocked: Set<string>; started: BlockedAction[] } {
  const blocked = new Set<string>();
  const started: BlockedAction[] = [];
  for (const a of rules) {
    const key = `${ruleKey(a)}|${a.cause}`;
    if (blocked.has(key)) continue;
    blocked.add(key);
    if (!previous.has(key)) started.push(a);
  }
  return { blocked, started };
}

/** A scaling action the supervisor carried out (a creation it started, a drain the group took). */
export type Actuated = Extract<Action, { type: 'create' } | { type: 'drain' }>;

/**
 * The memory after an action was carried out: a scale-out or scale-in starts its rule's cooldown;
 * a request's scale-out is counted against the lookups' budget. Min, max, schedules and retirement
 * keep no cooldown: they are limits, not reactions to load.
 */
export function afterActuation(memory: PlannerMemory, action: Actuated, now: number): PlannerMemory {
  const key = ruleKey(action);
  const lastScaled = new Map(memory.lastScaled);
  const requested = new Map(memory.requested);
  if (startsCooldown(action)) lastScaled.set(key, now);
  if (action.type === 'create' && action.trigger === 'request') {
    const recent = (requested.get(key) ?? []).filter((r) => now - r.at < REQUESTS_KEPT_MS).slice(-(REQUESTS_KEPT - 1));
    requested.set(key, [...recent, { at: now, count: action.count }]);
  }
  return { ...memory, lastScaled, requested };
}

/** Whether the action starts its rule's cooldown (and so changes what is remembered). */
export function startsCooldown(action: Actuated): boolean {
  return action.type === 'create' ? action.trigger === 'scaleOut' || action.trigger === 'request' : action.trigger === 'scaleIn';
}
