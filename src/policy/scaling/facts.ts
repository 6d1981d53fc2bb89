// What the scaling plan knows of a node: a snapshot the group model makes (src/model) and the
// plan reads. Pure data.
import type { PlatformData } from '../../domain/records.js';
import type { NodeState, Role } from '../../domain/vocabulary.js';

export interface NodeFacts {
  id: string;
  role: Role;
  region: string;
  state: NodeState;
  stateSince: number;
  lastSeen: number | null;
  /**
   * Whether the node has posted since this actor loaded it: after a restart its metrics and
   * connections are unknown (not zero) until it does.
   */
  reported: boolean;
  connections: number;
  /** The node's rank as the selection sees it (reported, plus assignments since). */
  rank: number;
  /** Metrics as last reported, for the rules' aggregates. */
  metrics: Record<string, number>;
  platform: PlatformData;
  hasLiveStreams: boolean;
}
