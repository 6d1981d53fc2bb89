// What the node agent needs of the media server beside it, whichever it is: the simulated one
// (sessions opened over HTTP) or a real nginx with the RTMP module. The agent's loop is the same
// for both: report, post the heartbeat, hand the reply's orders to the backend.
import type { Listener } from '../domain/records.js';
import type { NodeOrders, StreamMedia } from '../schemas/heartbeat.js';

// The heartbeat's orders are the control plane's message, declared once (src/schemas/heartbeat.ts).
export type { NodeOrders, ParentOrder, TranscodeJob } from '../schemas/heartbeat.js';

export interface BackendReport {
  ready: boolean;
  /** Why the node is not ready, in words an operator can act on. */
  problem?: string;
  listeners: { publish?: Listener; subscribe?: Listener };
  metrics: Record<string, number>;
  /** Per stream: who is there, and what the node can say of its media (rates, codecs, resolution, uptime). */
  streams: Array<{ name: string; publishing: boolean; subscribers: number } & StreamMedia>;
}

export interface MediaBackend {
  /** The address clients reach this node at, once started. */
  readonly address: string;
  start(): Promise<void>;
  report(): Promise<BackendReport>;
  apply(orders: NodeOrders): Promise<void>;
  stop(): Promise<void>;
}

/** The media servers an agent runs beside: simulated, nginx-rtmp, or a WebRTC engine (src/agent/webrtc). */
export { LOCAL_BACKENDS as BACKENDS, type LocalBackend as BackendName } from '../domain/vocabulary.js';
