// What the node agent needs of the media server beside it, whichever it is: the simulated one
// (sessions opened over HTTP) or a real nginx with the RTMP module. The agent's loop is the same
// for both: report, post the heartbeat, hand the reply's orders to the backend.
import type { Listener, Rendition } from '../domain/records.js';

/** A transcode order from the heartbeat reply (CONTRACT §6): the ladder and where to push it. */
export interface TranscodeJob {
  stream: string;
  origin: { nodeId: string; address: string; port: number; protocol: string };
  renditions: Rendition[];
}

/** The node an edge or relay pulls from, with its pull listener when the control plane knows it. */
export interface ParentOrder {
  nodeId: string;
  address: string;
  port?: number;
  protocol?: string;
}

export interface NodeOrders {
  parent: ParentOrder | null;
  drain: boolean;
  /** Absent: no change (the control plane may still be loading its bindings). */
  transcode?: TranscodeJob[];
}

export interface BackendReport {
  ready: boolean;
  /** Why the node is not ready, in words an operator can act on. */
  problem?: string;
  listeners: { publish?: Listener; subscribe?: Listener };
  metrics: Record<string, number>;
  streams: Array<{ name: string; publishing: boolean; subscribers: number }>;
}

export interface MediaBackend {
  /** The address clients reach this node at, once started. */
  readonly address: string;
  start(): Promise<void>;
  report(): Promise<BackendReport>;
  apply(orders: NodeOrders): Promise<void>;
  stop(): Promise<void>;
}

export const BACKENDS = ['simulated', 'nginx-rtmp'] as const;
export type BackendName = (typeof BACKENDS)[number];
