// Where nodes come from (CONTRACT §8). A platform is mechanism only: the supervisor decides when
// to create and destroy; a platform does it and reports what it got.
import type { NodeGroup } from '../config/types.js';
import type { NodeRecord, PlatformData } from '../domain/records.js';
import type { Role } from '../domain/vocabulary.js';

export interface NewNode {
  id: string;
  role: Role;
  region: string;
}

/** What a platform needs to know of a recorded node. */
export type NodeRef = Pick<NodeRecord, 'id' | 'role' | 'region' | 'platform'>;

export interface Platform {
  readonly type: PlatformData['type'];
  /** Where a new node will live, decided before its record is written so the record says so. */
  prepare(group: NodeGroup, node: NewNode): PlatformData;
  /** Creates the node; resolves with its platform data once it exists (it then heartbeats). */
  create(group: NodeGroup, node: NodeRef): Promise<PlatformData>;
  /** Destroys the node; resolves once it is gone. Destroying a node that is already gone succeeds. */
  destroy(node: NodeRef): Promise<void>;
  /** Whether a recorded node still exists (checked at start, to adopt or replace it). */
  exists(node: NodeRef): boolean;
  /** Stops what this platform runs on this machine when the service stops. */
  shutdown(nodes: readonly NodeRef[]): Promise<void>;
}

export class PlatformError extends Error {
  constructor(
    message: string,
    readonly retryable = true,
  ) {
    super(message);
    this.name = 'PlatformError';
  }
}
