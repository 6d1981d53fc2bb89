// The words of scaling shared by the plan, the supervisor and the events (docs/scaling.md).
import type { Role } from './vocabulary.js';

/** What fired a scaling action: below min, above max, a schedule's window (its min or max), a lookup without room, a rule's condition, no rule for the node, its group being deleted. */
export type ScalingTrigger = 'min' | 'max' | 'schedule' | 'request' | 'scaleOut' | 'scaleIn' | 'unconfigured' | 'retire';

/** Why a rule did not scale out when asked: too many faults, at max, or lookups' budget spent. */
export type BlockedCause = 'faults' | 'max' | 'budget';

/** A rule's key: one rule per region and role. */
export const ruleKey = (r: { region: string; role: Role }): string => `${r.region}|${r.role}`;
