// The scaling planner's side of a node group (docs/scaling.md): what it remembers between plans
// (src/policy/scaling/memory.ts: cooldowns, the lookups' budget, the last evaluation, the blocked
// rules), kept as one record of the group's so that it is committed, replicated and snapshotted
// with the nodes it is about; and the capacity that lookups found missing since the last plan,
// which waits here for that plan instead of travelling out of the group's thread and back.
import type { CapacityRequest } from '../policy/scaling/actions.js';
import type { NodeFacts } from '../policy/scaling/facts.js';
import {
  afterActuation,
  blockedSince,
  emptyMemory,
  evaluationDue,
  memoryOf,
  PLANNER_KEY,
  recordOf,
  startsCooldown,
  type Actuated,
  type PlannerMemory,
  type PlannerRecord,
} from '../policy/scaling/memory.js';
import { planGroup, type GroupPlan } from '../policy/scaling/plan.js';
import type { EffectLog } from './effects.js';
import type { Settings } from './settings.js';

/** What the supervisor brings to a plan: what only the actuator knows. */
export interface PlanRequest {
  now: number;
  /** Nodes with a platform operation under way: left alone until it ends. */
  busy: ReadonlySet<string>;
  /** The group is being deleted: retire every node. */
  retiring: boolean;
}

export class Planner {
  private memory: PlannerMemory = emptyMemory();
  private requests: CapacityRequest[] = [];

  constructor(
    private readonly settings: Settings,
    private readonly effects: EffectLog,
  ) {}

  /** The stored memory, at start (nothing is written again). */
  restore(record: PlannerRecord | undefined): void {
    this.memory = memoryOf(record);
  }

  /** A lookup found no room: the next plan adds capacity for it. */
  ask(request: CapacityRequest): void {
    this.requests.push(request);
  }

  /** Whether lookups asked for capacity that no plan has seen yet. */
  get asked(): boolean {
    return this.requests.length > 0;
  }

  /**
   * The plan for the group's nodes now. A blocked rule is told once, as an event of the group's,
   * when it starts; the memory is written when what it holds changed, in the same commit.
   */
  plan(request: PlanRequest, nodes: readonly NodeFacts[]): GroupPlan {
    const { name, group } = this.settings;
    const evaluate = evaluationDue(this.memory, request.now, group.timing.evaluationInterval);
    const { blocked: blockedRules, ...planned } = planGroup({
      group,
      nodes,
      now: request.now,
      busy: request.busy,
      requests: this.requests.splice(0),
      lastScaled: this.memory.lastScaled,
      requested: this.memory.requested,
      evaluate,
      retiring: request.retiring,
    });
    const { blocked, started } = blockedSince(this.memory.blocked, blockedRules);
    for (const a of started) this.effects.emit({ type: 'scaling.blocked', group: name, role: a.role, region: a.region, cause: a.cause, reason: a.reason });
    const blockedChanged = blocked.size !== this.memory.blocked.size || started.length > 0;
    this.memory = { ...this.memory, blocked, lastEvaluated: evaluate ? request.now : this.memory.lastEvaluated };
    // The evaluation time alone is not written: a new owner evaluating once more early is harmless,
    // and a write per interval per group would fill the replicated log with nothing.
    if (blockedChanged) this.writeMemory();
    return planned;
  }

  /** The supervisor carried out a scaling action: told as an event, its cooldown remembered. */
  actuated(action: Actuated, now: number): void {
    const { role, region, trigger, reason, values } = action;
    const count = action.type === 'create' ? action.count : 1;
    this.effects.emit({
      type: 'scaling.action',
      group: this.settings.name,
      role,
      region,
      action: action.type,
      count,
      trigger,
      reason,
      ...(action.type === 'drain' ? { nodeId: action.nodeId } : {}),
      ...(values ? { values } : {}),
    });
    if (!startsCooldown(action)) return;
    this.memory = afterActuation(this.memory, action, now);
    this.writeMemory();
  }

  /** Writes the memory with the group's records (the planner table; the replicated log in cluster mode). */
  private writeMemory(): void {
    this.effects.write('planner', PLANNER_KEY, recordOf(this.memory));
  }
}
