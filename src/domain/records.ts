// What is kept in LMDB (docs/persistence.md). Per-second metrics are not: they live in the actors' memory
// and come back with the next heartbeat.
import type { BindingState, NodeState, Role } from './vocabulary.js';

export interface Listener {
  protocol: string;
  port: number;
}

export interface NodeAddress {
  public?: string;
  private?: string;
}

export type PlatformData = { type: 'local'; address: string; pid?: number } | { type: 'static'; address: string } | { type: 'terraform'; address?: string; privateAddress?: string };

export interface NodeRecord {
  id: string;
  group: string;
  role: Role;
  region: string;
  state: NodeState;
  /** When the node entered `state` (ms since the epoch): state timeouts count from here. */
  stateSince: number;
  createdAt: number;
  address?: NodeAddress;
  listeners?: { publish?: Listener; subscribe?: Listener };
  /** The node an edge or relay pulls from. */
  parent?: string | null;
  platform: PlatformData;
  faultReason?: string;
  /**
   * The draining state a FAULT node left, and since when it was in it: reinstated, it drains on
   * rather than serving again, on the drain's own clock (a node that blips must still finish).
   */
  faultedFrom?: { state: 'SOFT_SUNSET' | 'HARD_SUNSET'; since: number };
}

export interface BindingRecord {
  stream: string;
  origin: string;
  /** Set when the stream is published through a transcoder (transcode=true). */
  transcoder?: string;
  state: BindingState;
  /** When the binding was made, and when it last changed state. */
  boundAt: number;
  since: number;
  /** The token subject whose lookup made it, while it is PENDING (counted against its cap). */
  by?: string;
}

export interface Rendition {
  name: string;
  level: number;
  videoBR: number;
  videoWidth: number;
  videoHeight: number;
  videoFPS: number;
  audioBR: number;
}

export interface Provision {
  streamName: string;
  region: string;
  streams: Rendition[];
  createdAt: number;
  updatedAt: number;
}

/** A scale-out that failed lookups asked for, as the supervisor carried it out: when, and how many nodes. */
export interface Requested {
  at: number;
  count: number;
}

/**
 * The scaling planner's memory of a node group, as stored with its records (one per group;
 * src/policy/scaling/memory.ts reads and writes it): when each rule (`region|role`) last scaled,
 * the scale-outs failed lookups had per rule, the last evaluation of the rules' conditions, the
 * rules blocked at the last plan (`region|role|cause`).
 */
export interface PlannerRecord {
  lastScaled: Array<[string, number]>;
  requested: Array<[string, Requested[]]>;
  lastEvaluated: number;
  blocked: string[];
}
