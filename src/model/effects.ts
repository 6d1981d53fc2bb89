// Effects: the durable writes and the events the model's calls cause, in the order they were
// decided, kept until the actor takes them (GroupModel.takeEffects) to commit the writes in one
// transaction and publish the events once the writes are durable. GroupModel owns the one log and
// hands it to the modules that write; nothing reads it back.
import type { EventBody } from '../domain/events.js';
import type { BindingRecord, NodeRecord, PlannerRecord, Provision } from '../domain/records.js';

export type Write =
  | { kind: 'node'; key: string; value: NodeRecord | null }
  | { kind: 'binding'; key: string; value: BindingRecord | null }
  | { kind: 'provision'; key: string; value: Provision | null }
  | { kind: 'planner'; key: string; value: PlannerRecord | null };

export interface Effects {
  writes: Write[];
  events: EventBody[];
}

export class EffectLog {
  private pending: Effects = { writes: [], events: [] };

  /** A record to store (or, null, to delete) under `key` in the group's table of its kind. */
  write(kind: Write['kind'], key: string, value: NodeRecord | BindingRecord | Provision | PlannerRecord | null): void {
    // Records are mutated in place; a structured copy pins what this write means.
    this.pending.writes.push({ kind, key, value: value === null ? null : structuredClone(value) } as Write);
  }

  emit(event: EventBody): void {
    this.pending.events.push(event);
  }

  /** The writes and events since the last take, handed over: the log starts empty again. */
  take(): Effects {
    const out = this.pending;
    this.pending = { writes: [], events: [] };
    return out;
  }
}
