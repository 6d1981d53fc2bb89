// What a node group's handle (group-handle.ts) needs of the service around it, and no more: its
// store's settings, where its events go, a thread loaded in advance, the supervisor's part, and
// in cluster mode the seam to the other instances. The host (host.ts) makes one; the handle never
// reaches back into the host.
import type { NodeGroup } from '../src/config/types.js';
import type { EventBody } from '../src/domain/events.js';
import type { GroupApi } from './group/actor.js';
import type { ReadyThread, Remote } from './supervised-worker.js';

/**
 * Cluster mode (src/root/cluster.ts): a group's actor runs only on the instance that owns the
 * group; every other instance forwards its calls there. Absent in the embedded default.
 */
export interface ClusterSeam {
  servers: string[];
  instance: string;
  /** When an owner snapshots its group's log (entries since the last, or time: ms). */
  snapshot: { entries: number; intervalMs: number };
  /** This instance holds the group's lease and may answer for it now (checked on every call). */
  serving(group: string): boolean;
  /** Whether some instance is known to own the group (its lease is held). */
  owned(group: string): boolean;
  /** The call, made by the group's owner; rejects with an error named ActorUnavailable or NotServedHere when none answers in time. */
  forward(group: string, method: string, args: unknown[]): Promise<unknown>;
  /** The actor found its group taken over (its log holds a later owner's entries). */
  fenced(group: string): void;
}

/** The supervisor's calls a group's handle makes. */
export interface SupervisorLink {
  detachGroup(name: string): Promise<void>;
  reconfigure(group: NodeGroup): Promise<void>;
}

export interface GroupContext {
  dataDir: string;
  durability: 'commit' | 'flush';
  minFreeBytes?: number;
  cluster?: ClusterSeam;
  /** Events to log; `key` names the replicated commit that carried them (EventBatch). */
  onEvents(events: EventBody[], key?: string): void;
  /** Seconds a call to an actor took, by method. */
  observe?(method: string, seconds: number): void;
  onError?(group: string, err: Error): void;
  /** A thread loaded in advance (cluster mode: spare.ts), if there is one. */
  spare(): Promise<ReadyThread<GroupApi> | null>;
  /** Gives the supervisor (if it runs) a channel of its own to the group's actor, now serving. */
  connect(actor: Remote<GroupApi>, group: NodeGroup, deleting: boolean): Promise<void>;
  /** The supervisor, while it runs. */
  supervisor(): SupervisorLink | null;
}
