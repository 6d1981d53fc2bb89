// Where nodes come from (docs/nodes.md, Platforms). A platform is mechanism only: the supervisor
// decides when to create and destroy; a platform does it and reports what it got. What a
// platform can do is said by its capabilities (src/domain/capabilities.ts), never by asking which
// platform it is.
import type { NodeGroup } from '../config/types.js';
import type { NodeRecord, PlatformData } from '../domain/records.js';
import type { NodeState, Role } from '../domain/vocabulary.js';
import type { PlatformCapabilities } from '../domain/capabilities.js';

export interface NewNode {
  id: string;
  role: Role;
  region: string;
}

/** What a platform needs to know of a recorded node. */
export type NodeRef = Pick<NodeRecord, 'id' | 'role' | 'region' | 'platform'>;

/** What a platform has, set against what LMDB records (at start, and after a failed reconcile). */
export interface Reconciliation {
  /** Nodes the platform lists that LMDB lacks: recorded, in `state` (a static fleet's config). */
  listed: Array<NewNode & { platform: PlatformData; state: NodeState }>;
  /** Recorded nodes the platform no longer has: faulted and replaced, or finished if being destroyed. */
  missing: string[];
  /** Why the missing are missing, for their FAULT reason. */
  missingReason?: string;
  /** Recorded nodes the platform's owner removed (a static node dropped from the config): retired. */
  retired: string[];
  /** Resources of nodes LMDB does not know (a create that finished after a crash): destroyed. */
  orphans: string[];
}

export interface Platform {
  readonly capabilities: PlatformCapabilities;
  /** Where a new node will live, decided before its record is written so the record says so. */
  prepare(group: NodeGroup, node: NewNode): PlatformData;
  /** Creates the node; resolves with its platform data once it exists (it then heartbeats). */
  create(group: NodeGroup, node: NodeRef): Promise<PlatformData>;
  /** Destroys the node; resolves once it is gone. Destroying a node that is already gone succeeds. */
  destroy(node: NodeRef): Promise<void>;
  /** What the platform has against the recorded nodes (see Reconciliation). */
  reconcile(group: NodeGroup, nodes: readonly NodeRef[]): Promise<Reconciliation>;
  /** Destroys an orphan: resources of a node LMDB does not know. */
  removeOrphan(id: string): Promise<void>;
  /** Stops what this platform runs on this machine when the service stops (capabilities.stopsWithService). */
  shutdown(nodes: readonly NodeRef[]): Promise<void>;
  /** The group's definition changed. */
  reconfigure(group: NodeGroup): void;
}

export class PlatformError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PlatformError';
  }
}

/** A reconciliation that found everything as recorded. */
export const NOTHING_TO_RECONCILE: Reconciliation = { listed: [], missing: [], retired: [], orphans: [] };
