// A WebRTC node as the agent's loop sees it (docs/webrtc.md): the WHIP/WHEP endpoints
// (endpoints.ts) in front of an engine (werift in this process, or Janus beside it), reported in
// every heartbeat (listeners `whip` and `whep`, sessions per stream) and told what the reply
// says (the parent streams come from, drain, publishers to drop). Engine-neutral: an engine is
// made by the factory the agent passes in.
import type { Role } from '../../domain/vocabulary.js';
import type { AdmissionGate } from '../admission/gate.js';
import type { BackendReport, MediaBackend, NodeOrders } from '../backend.js';
import { systemMetrics } from '../system-metrics.js';
import type { ParentLink, WebRtcEngine } from './engine.js';
import { WebRtcEndpoints } from './endpoints.js';
import { MediaRates } from './stream-media.js';

export interface WebRtcBackendOptions {
  engine: WebRtcEngine;
  gate: AdmissionGate;
  role: Role;
  scope: string;
  /** Where the endpoints listen: the node's private address, and the port asked for (0: any). */
  address: string;
  port: number;
  maxSessions: number;
  log(msg: string, extra?: Record<string, unknown>): void;
}

/** What each role serves over WebRTC (a WebRTC transcoder waits for a later round: docs/webrtc.md). */
const SERVES: Record<Role, { publish: boolean; play: boolean }> = {
  origin: { publish: true, play: true },
  edge: { publish: false, play: true },
  relay: { publish: false, play: true },
  transcoder: { publish: false, play: false },
};

export class WebRtcBackend implements MediaBackend {
  private readonly endpoints: WebRtcEndpoints;
  private draining = false;
  private started = false;
  /** Byte counters between heartbeats, for each stream's bit rates. */
  private readonly rates = new MediaRates();

  constructor(private readonly o: WebRtcBackendOptions) {
    this.endpoints = new WebRtcEndpoints({
      engine: o.engine,
      gate: o.gate,
      role: o.role,
      scope: o.scope,
      draining: () => this.draining,
      maxSessions: o.maxSessions,
      log: o.log,
    });
  }

  get address(): string {
    return this.endpoints.address || this.o.address;
  }

  async start(): Promise<void> {
    await this.o.engine.start();
    await this.endpoints.start(this.o.address, this.o.port);
    this.started = true;
  }

  async stop(): Promise<void> {
    await this.endpoints.stop();
    await this.o.engine.stop();
  }

  async report(): Promise<BackendReport> {
    const serves = SERVES[this.o.role];
    // At heartbeat cadence only: an engine's counters kept elsewhere (Janus's) are read now.
    await this.o.engine.refresh?.().catch((err: unknown) => this.o.log('could not read the engine counters', { error: (err as Error).message }));
    const streams = this.o.engine.streams();
    const media = this.rates.report(streams, Date.now());
    let publishers = 0;
    let subscribers = 0;
    const children = new Set<string>();
    for (const s of streams) {
      if (s.publishing) publishers++;
      subscribers += s.subscribers;
      for (const r of s.relays ?? []) children.add(r);
    }
    const port = this.endpoints.port;
    // An engine with a media server of its own (Janus) says whether it serves now, and why not.
    const engine = this.o.engine.status?.() ?? { ready: true, problem: null };
    const ready = this.started && (serves.publish || serves.play) && engine.ready;
    return {
      ready,
      ...(ready
        ? {}
        : {
            problem: !this.started
              ? 'starting'
              : !engine.ready
                ? (engine.problem ?? `the ${this.o.engine.name} engine is not serving`)
                : `a ${this.o.role} does not serve WebRTC on the ${this.o.engine.name} engine`,
          }),
      listeners: {
        ...(serves.publish ? { publish: { protocol: 'whip', port } } : {}),
        ...(serves.play ? { subscribe: { protocol: 'whep', port } } : {}),
      },
      metrics: {
        ...systemMetrics(),
        'connections.publisher': publishers,
        'connections.subscriber': subscribers,
        'connections.clusterchildren': children.size,
      },
      streams: streams.map((s) => ({ name: s.name, publishing: s.publishing, subscribers: s.subscribers, ...media.get(s.name) })),
    };
  }

  async apply(orders: NodeOrders): Promise<void> {
    this.draining = orders.drain;
    this.o.engine.setParent(orders.parent ? linkOf(orders.parent) : null);
    for (const stream of orders.drop?.streams ?? []) await this.o.engine.dropPublisher(stream);
  }
}

function linkOf(p: NonNullable<NodeOrders['parent']>): ParentLink | null {
  // A parent that reports no WHEP listener (not yet, or not a WebRTC node) has nothing to pull from.
  if (p.port === undefined || (p.protocol !== undefined && p.protocol !== 'whep')) return null;
  return { nodeId: p.nodeId, address: p.address, port: p.port, ...(p.protocol ? { protocol: p.protocol } : {}), ...(p.credential ? { credential: p.credential } : {}) };
}
