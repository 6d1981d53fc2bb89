// Capacity: min, max, lookups that found no room, and the rules' conditions. Pure.
import type { RuleConfig } from '../../config/types.js';
import { ruleKey, type BlockedCause } from '../../domain/scaling.js';
import { capabilitiesOf } from '../../platforms/capabilities.js';
import { compiled, ruleScope, termValues } from '../expressions/scope.js';
import { BEING_CREATED, countsTowardCapacity, DRAINING } from '../states.js';
import type { Action, CapacityRequest, PlanInput, Trigger } from './actions.js';
import type { NodeFacts } from './facts.js';
import { rulesAt } from './schedules.js';

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

  for (const rule of rulesAt(group.rules, group.schedules, now)) {
    if (!group.roles[rule.role]) continue;
    // A min or max a schedule's window set (schedules.ts): said so in the action's trigger and reason.
    const scheduledMin = rule.windows.find((w) => w.min === rule.min);
    const scheduledMax = rule.windows.find((w) => w.max === rule.max);
    const until = (w: { name: string; until: number }) => `schedule '${w.name}' until ${new Date(w.until).toISOString()}`;
    const key = ruleKey(rule);
    // Toward min: what serves or will (a draining node is on its way out). Toward max: every node
    // that runs, draining ones included (docs/scaling.md: only FAULT nodes do not count).
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
      create(Math.min(rule.min - counted, rule.max - running), scheduledMin ? 'schedule' : 'min', `below min ${rule.min}${scheduledMin ? ` (${until(scheduledMin)})` : ''}`);
      continue;
    }
    if (counted > rule.max) {
      drain([...inService].sort(byScaleInOrder).slice(0, counted - rule.max), scheduledMax ? 'schedule' : 'max', `above max ${rule.max}${scheduledMax ? ` (${until(scheduledMax)})` : ''}`);
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
