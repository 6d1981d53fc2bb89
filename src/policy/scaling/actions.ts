// What a scaling plan asks for, and what it is planned from (src/policy/scaling).
import type { NodeGroup } from '../../config/types.js';
import type { Requested } from '../../domain/records.js';
import type { BlockedCause, ScalingTrigger } from '../../domain/scaling.js';
import type { Role } from '../../domain/vocabulary.js';
import type { NodeEvent } from '../states.js';
import type { NodeFacts } from './facts.js';

export type Trigger = ScalingTrigger;

export type Action =
  | { type: 'event'; nodeId: string; event: NodeEvent }
  | { type: 'create'; role: Role; region: string; count: number; trigger: Trigger; reason: string; values?: Record<string, number> }
  | { type: 'drain'; nodeId: string; role: Role; region: string; trigger: Trigger; reason: string; values?: Record<string, number> }
  | { type: 'destroy'; nodeId: string }
  | { type: 'blocked'; role: Role; region: string; cause: BlockedCause; reason: string };

/** A rule that cannot scale as it should: the planner tells it once (a scaling.blocked event); nothing carries it out. */
export type BlockedAction = Extract<Action, { type: 'blocked' }>;

/** What the supervisor carries out: every action but a blocked rule. */
export type ActuatorAction = Exclude<Action, { type: 'blocked' }>;

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
