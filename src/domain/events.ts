// Events (docs/api.md, GET /events): what changed, why, and where. Actors produce them; the
// front end numbers them, keeps a bounded log in LMDB and streams them to admins.
import type { BlockedCause, ScalingTrigger } from './scaling.js';
import type { NodeState, Role } from './vocabulary.js';

export type EventBody =
  | { type: 'node.state'; group: string; nodeId: string; role: Role; region: string; from: NodeState | null; to: NodeState | null; reason?: string }
  | { type: 'node.parent'; group: string; nodeId: string; parent: string | null; reason: string }
  | { type: 'stream.bound'; group: string; stream: string; origin: string; transcoder?: string }
  | { type: 'stream.live'; group: string; stream: string; origin: string }
  | { type: 'stream.moved'; group: string; stream: string; from: string; to: string; reason: string }
  | { type: 'stream.unbound'; group: string; stream: string; origin: string; reason: string }
  | { type: 'provision.changed'; group: string; stream: string; change: 'created' | 'replaced' | 'deleted' }
  | { type: 'scaling.request'; group: string; role: Role; region: string; reason: string }
  | {
      type: 'scaling.action';
      group: string;
      role: Role;
      region: string;
      action: 'create' | 'drain';
      count: number;
      trigger: ScalingTrigger;
      reason: string;
      nodeId?: string;
      /** The aggregates the condition read, and the limit, when a condition fired. */
      values?: Record<string, number>;
    }
  | { type: 'scaling.blocked'; group: string; role: Role; region: string; cause: BlockedCause; reason: string }
  | { type: 'platform.error'; group: string; nodeId?: string; operation: string; message: string }
  | {
      type: 'platform.progress';
      group: string;
      platform: 'terraform';
      operation: string;
      phase: string;
      nodeId?: string;
      resource?: string;
      action?: string;
      attempt?: number;
      message?: string;
    }
  | { type: 'actor.crashed'; group: string; reason: string }
  | { type: 'actor.restarted'; group: string; downMs: number }
  | { type: 'store.unavailable'; group: string; message: string }
  | { type: 'store.recovered'; group: string }
  /** Cluster mode: an instance took the group over at `epoch` (docs/cluster.md). */
  | { type: 'cluster.owner'; group: string; owner: string; epoch: number }
  /** Cluster mode: an instance stopped serving the group (lost, handed over, stopping). */
  | { type: 'cluster.released'; group: string; owner: string; reason: string }
  | { type: 'nodegroup.changed'; group: string; change: 'created' | 'replaced' | 'deleting' | 'drained' | 'deleted' };

export type EventRecord = EventBody & { seq: number; at: number };

/**
 * Events as an actor's thread posts them. `key` (cluster mode) names the commit of the group's
 * replicated log that carried them, `<group>.<entry sequence>.<commit index>`: the group's next
 * owner publishes them again after a takeover, and the event stream recognises each one as
 * already logged (docs/cluster.md, "Events across a takeover").
 */
export interface EventBatch {
  events: EventBody[];
  key?: string;
}

/** The key of a commit's events (EventBatch): its group, its log entry, its place in that entry. */
export function commitKey(group: string, seq: number, index: number): string {
  return `${group}.${seq}.${index}`;
}
