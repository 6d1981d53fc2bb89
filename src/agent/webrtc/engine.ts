// A WebRTC node's media engine, behind the agent's WHIP (RFC 9725) and WHEP endpoints
// (docs/webrtc.md). The agent owns HTTP, admission (src/agent/admission/gate.ts) and the
// heartbeat; an engine owns the media: `werift` (a forwarding unit in the agent's own process)
// or `janus` (a Janus gateway the agent runs and drives with janode). One interface, one file
// per engine, as for the control plane's selectors.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { EngineMedia } from './stream-media.js';

/** A session the engine made from a client's SDP offer. */
export interface EngineSession {
  /** The engine's id for the session: the WHIP/WHEP resource's last path segment. */
  id: string;
  /** The SDP answer. */
  sdp: string;
}

/** What the engine cannot do for a request, with the HTTP status the agent answers. */
export class EngineRefusal extends Error {
  constructor(
    readonly status: 400 | 404 | 405 | 406 | 409 | 415 | 422 | 503,
    message: string,
  ) {
    super(message);
    this.name = 'EngineRefusal';
  }
}

/** Where an edge or relay takes its streams from, and the credential it presents there. */
export interface ParentLink {
  nodeId: string;
  address: string;
  port: number;
  /** The parent's pull listener's protocol (`whep` on WebRTC nodes), when it reports one. */
  protocol?: string;
  credential?: string;
}

/** Who asks to play: a viewer, or a node pulling for its own viewers (admission: a relay credential). */
export interface PlayOptions {
  /** The pulling node's id, when it is one: counted apart (connections.clusterchildren). */
  relayFor?: string;
}

/** One stream on this node, as the heartbeat reports it. */
export interface EngineStream {
  name: string;
  publishing: boolean;
  /** Play sessions: viewers, and nodes pulling the stream. */
  subscribers: number;
  /** The nodes among them that pull the stream (edges and relays under this node). */
  relays?: string[];
  /** What the engine knows of the stream's media while it is fed here (stream-media.ts): byte counts, since when, codecs. */
  media?: EngineMedia;
}

export interface WebRtcEngine {
  readonly name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** WHIP: a publisher's offer for `stream`. */
  publish(stream: string, offer: string): Promise<EngineSession>;
  /** WHEP: a viewer's (or a pulling node's) offer for `stream`; an edge fetches the stream from its parent first if it must. */
  play(stream: string, offer: string, options?: PlayOptions): Promise<EngineSession>;
  /** A trickle-ice-sdpfrag or ICE restart for a session: the answer fragment, or null (405) where the engine cannot. */
  patch(id: string, fragment: string): Promise<string | null>;
  /** Ends a session; false when there is none. */
  end(id: string): Promise<boolean>;
  /** Disconnects the publisher of a stream (admission: its binding moved elsewhere, or it was ended). */
  dropPublisher(stream: string): Promise<void>;
  /** The parent the control plane names (edges and relays): streams come from there. */
  setParent(parent: ParentLink | null): void;
  /** Publishers and viewers per stream, for the heartbeat. */
  streams(): EngineStream[];
  /**
   * Reads what the engine counts outside this process (Janus: its admin API's byte counters)
   * before a heartbeat's streams(); bounded in time, and never throws. Absent: streams() knows.
   */
  refresh?(): Promise<void>;
  /**
   * Whether the engine serves now, and why not (a media server beside the agent that crashed and
   * is being restarted); absent: always, once started.
   */
  status?(): { ready: boolean; problem: string | null };
  /**
   * Routes of the engine's own on the node's WHIP/WHEP listener (Janus: the relay routes an edge's
   * agent asks its parent's for RTP forwards); true when the request was one of them and answered.
   */
  serve?(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
}
