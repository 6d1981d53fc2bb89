// The `janus` WebRTC engine (docs/webrtc.md#janus-nodes): a Janus gateway beside the agent (runtime.ts),
// driven with janode (gateway.ts).
//
// - WHIP (origins): a VideoRoom room per stream, one publisher in it, its offer given
//   `a=setup:active` (sdp.ts); a new publisher of the same stream replaces the old.
// - WHEP (edges, and origins): viewers watch a Streaming mountpoint of the stream (mountpoints.ts),
//   fed by VideoRoom RTP forwarding: from this node's own room on an origin, from the parent's room
//   on an edge (relay.ts). Janus 1.1.2 offers to viewers rather than answering them: the two offers
//   are bridged (sdp.ts). A mountpoint lives while it has viewers.
// - Forwards (forwards.ts) outlive a publisher's reconnection: a new publisher of the stream feeds
//   every mountpoint that was fed.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import Janode from 'janode';
import type { AdmissionGate } from '../../admission/gate.js';
import type { Role } from '../../../domain/vocabulary.js';
import { EngineRefusal, type EngineSession, type EngineStream, type ParentLink, type WebRtcEngine } from '../engine.js';
import { AdminStats } from './admin-stats.js';
import { Forwards, type PublisherMedia } from './forwards.js';
import type { EngineMedia } from '../stream-media.js';
import { JanusError, type ClientHandle, type JanusGateway } from './gateway.js';
import { Mountpoints } from './mountpoints.js';
import { type RelayClient, type RelaySource, type RelayTarget, serveRelay } from './relay.js';
import type { JanusRuntime } from './runtime.js';
import { bridgeOffers, directionOf, hasEndOfCandidates, midOf, parseSdp, parseTrickleFragment, portOf, preferActiveSetup, SdpError, viewerPayloadTypes } from './sdp.js';

const PUBLISHES: ReadonlySet<Role> = new Set(['origin']);
const PLAYS: ReadonlySet<Role> = new Set(['origin', 'edge']);
/** The one publisher of a room. */
const FEED = 1;

interface Session {
  id: string;
  kind: 'publish' | 'play';
  stream: string;
  client: ClientHandle;
  /** A viewer's mids as Janus knows them (its trickled candidates are renamed). */
  mids?: Map<string, { mid: string; index: number }>;
  /** A viewer's mountpoint (mountpoints.ts). */
  mountpoint?: string;
  /** A publisher's media for the heartbeat: since when, and its codecs (rooms take VP8 and Opus only); its bytes are Janus's (admin-stats.ts). */
  media?: EngineMedia;
  /** When the session began (a stream with viewers only: since when the node carries it). */
  since: number;
}

export interface JanusEngineOptions {
  role: Role;
  runtime: JanusRuntime;
  relays: RelayClient;
  /** Checks the relay credentials of the edges that ask this node for forwards. */
  gate: AdmissionGate;
  /** The local nodes' subnet (their Janus addresses), which forwards may go to; null on real hosts. */
  subnet: { base: number; prefix: number } | null;
  log(msg: string, extra?: Record<string, unknown>): void;
}

/** A failure of Janus as the HTTP answer says it: the client may try again. */
function unavailable(err: unknown): EngineRefusal {
  if (err instanceof EngineRefusal) return err;
  if (err instanceof SdpError) return new EngineRefusal(400, err.message);
  return new EngineRefusal(503, `janus: ${(err as Error).message}`);
}

export class JanusEngine implements WebRtcEngine, RelaySource {
  readonly name = 'janus';
  private readonly sessions = new Map<string, Session>();
  private readonly rooms = new Map<string, number>();
  private readonly mountpoints: Mountpoints;
  private readonly forwards: Forwards;
  /** Each stream's byte counters, read from Janus's admin API at each heartbeat (refresh()). */
  private readonly counters: AdminStats;
  private nextId = 1;

  constructor(private readonly o: JanusEngineOptions) {
    this.forwards = new Forwards({ gateway: () => this.o.runtime.gateway, log: o.log });
    this.mountpoints = new Mountpoints({
      role: o.role,
      mediaAddress: () => o.runtime.mediaAddress,
      gateway: () => o.runtime.gateway,
      forwards: this.forwards,
      relays: o.relays,
      nextId: () => this.nextId++,
      log: o.log,
    });
    this.counters = new AdminStats({ admin: () => o.runtime.admin, log: o.log });
    o.runtime.onDown = () => this.forgetAll();
  }

  private gateway(): JanusGateway {
    const gw = this.o.runtime.gateway;
    if (!gw) throw new EngineRefusal(503, `janus is not serving: ${this.o.runtime.problem ?? 'down'}`);
    return gw;
  }

  async start(): Promise<void> {
    await this.o.runtime.start();
    this.mountpoints.startRenewal();
    this.forwards.startExpiry();
  }

  async stop(): Promise<void> {
    this.mountpoints.stopRenewal();
    this.forwards.stopExpiry();
    await Promise.allSettled([...this.sessions.keys()].map((id) => this.end(id)));
    await this.o.runtime.stop();
  }

  /** The engine's own routes on the node's WHIP/WHEP listener (relay.ts): true when the request was one of them. */
  serve(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    return serveRelay(req, res, { source: this, gate: this.o.gate, subnet: this.o.subnet });
  }

  /** Whether the node serves, and why not. */
  status(): { ready: boolean; problem: string | null } {
    const problem = this.o.runtime.problem;
    return { ready: problem === null, problem };
  }

  /** Janus went down: everything it held is gone. */
  private forgetAll(): void {
    this.sessions.clear();
    this.rooms.clear();
    this.mountpoints.clear();
    this.forwards.clear();
    this.counters.clear();
  }

  // WHIP.

  async publish(stream: string, offer: string): Promise<EngineSession> {
    if (!PUBLISHES.has(this.o.role)) throw new EngineRefusal(405, `a ${this.o.role} takes no publishers: publish to the stream's origin`);
    const sdp = parseSdp(offer);
    if (!sdp.media.some((m) => portOf(m) !== 0 && directionOf(m, sdp.session) !== 'recvonly' && directionOf(m, sdp.session) !== 'inactive')) {
      throw new EngineRefusal(400, 'the offer sends no media');
    }
    const gw = this.gateway();
    // A publisher of the same stream here already: the new one replaces it (a reconnecting client).
    for (const s of [...this.sessions.values()]) if (s.kind === 'publish' && s.stream === stream) await this.end(s.id);
    let client: ClientHandle | null = null;
    try {
      const room = await this.room(gw, stream);
      client = await gw.clientHandle('videoroom');
      const answer = await gw.publish(client, room, FEED, preferActiveSetup(offer), stream);
      if (hasEndOfCandidates(offer)) await client.handle.trickleComplete();
      const id = randomUUID();
      const media = publisherMedia(answer);
      const kinds = new Set(media.map((m) => m.kind));
      const since = Date.now();
      const session: Session = {
        id,
        kind: 'publish',
        stream,
        client,
        since,
        media: { since, ...(kinds.has('video') ? { video: { codec: 'VP8' } } : {}), ...(kinds.has('audio') ? { audio: { codec: 'opus' } } : {}) },
      };
      this.sessions.set(id, session);
      this.watchClient(session);
      this.forwards.publisherJoined(stream, { room, feed: FEED, media });
      // Media flows once ICE and DTLS are up; forwards start then (Janus says 'webrtcup').
      client.handle.once(Janode.EVENT.HANDLE_WEBRTCUP, () => {
        if (this.sessions.get(id) === session) void this.forwards.publisherUp(stream);
      });
      this.o.log('publisher joined', { stream, session: id });
      return { id, sdp: answer };
    } catch (err) {
      if (client) await gw.endClient(client);
      throw unavailable(err);
    }
  }

  private async room(gw: JanusGateway, stream: string): Promise<number> {
    let room = this.rooms.get(stream);
    if (room === undefined) {
      room = this.nextId++;
      this.rooms.set(stream, room);
    }
    await gw.createRoom(room);
    return room;
  }

  // WHEP.

  async play(stream: string, offer: string): Promise<EngineSession> {
    if (!PLAYS.has(this.o.role)) throw new EngineRefusal(405, `a ${this.o.role} takes no viewers`);
    const pts = viewerPayloadTypes(offer);
    if (pts.video === null && pts.audio === null) throw new EngineRefusal(406, 'the offer receives neither VP8 video nor Opus audio, which is all this node sends');
    const gw = this.gateway();
    const id = randomUUID();
    const { mountpoint, key } = await this.mountpoints.join(gw, stream, pts, id);
    let client: ClientHandle | null = null;
    try {
      client = await gw.clientHandle('streaming');
      const janusOffer = await gw.watch(client, mountpoint.id);
      const bridged = bridgeOffers(offer, janusOffer);
      if ('refused' in bridged) throw new EngineRefusal(406, bridged.refused);
      await gw.start(client, bridged.toJanus);
      if (hasEndOfCandidates(offer)) await client.handle.trickleComplete();
      const session: Session = { id, kind: 'play', stream, client, mids: bridged.mids, mountpoint: key, since: Date.now() };
      this.sessions.set(id, session);
      this.watchClient(session);
      return { id, sdp: bridged.toClient };
    } catch (err) {
      if (client) await gw.endClient(client);
      await this.mountpoints.leave(key, id);
      throw unavailable(err);
    }
  }

  // Sessions.

  /** Janus hung up or detached a client's handle (ICE failed, DTLS alert, the client left): the session ends. */
  private watchClient(session: Session): void {
    const gone = () => void this.end(session.id);
    session.client.handle.once(Janode.EVENT.HANDLE_HANGUP, gone);
    session.client.handle.once(Janode.EVENT.HANDLE_DETACHED, gone);
  }

  async patch(id: string, fragment: string): Promise<string | null> {
    const session = this.sessions.get(id);
    if (!session) throw new EngineRefusal(404, 'no such session');
    let frag: ReturnType<typeof parseTrickleFragment>;
    try {
      frag = parseTrickleFragment(fragment);
    } catch (err) {
      throw new EngineRefusal(400, (err as Error).message);
    }
    // An ICE restart (new credentials) needs a new offer from Janus: not done; the client starts a new session.
    if (frag.ufrag !== null && frag.pwd !== null && this.isRestart(session, frag.ufrag)) return null;
    const candidates = frag.candidates.map((c) => {
      const mapped = session.mids?.get(c.sdpMid);
      return mapped ? { ...c, sdpMid: mapped.mid, sdpMLineIndex: mapped.index } : c;
    });
    try {
      if (candidates.length > 0) await session.client.handle.trickle(candidates);
      if (frag.complete) await session.client.handle.trickleComplete();
    } catch (err) {
      throw unavailable(err);
    }
    return '';
  }

  private readonly ufrags = new Map<string, string>();

  /** Whether a fragment's ufrag differs from the first one the session's PATCHes carried. */
  private isRestart(session: Session, ufrag: string): boolean {
    const first = this.ufrags.get(session.id);
    if (first === undefined) {
      this.ufrags.set(session.id, ufrag);
      return false;
    }
    return first !== ufrag;
  }

  async end(id: string): Promise<boolean> {
    const session = this.sessions.get(id);
    if (!session) return false;
    this.sessions.delete(id);
    this.ufrags.delete(id);
    await this.o.runtime.gateway?.endClient(session.client);
    if (session.kind === 'publish') {
      this.forwards.publisherDown(session.stream);
      this.o.log('publisher left', { stream: session.stream, session: id });
    } else {
      await this.mountpoints.leave(session.mountpoint!, id);
    }
    return true;
  }

  async dropPublisher(stream: string): Promise<void> {
    for (const s of [...this.sessions.values()]) {
      if (s.kind !== 'publish' || s.stream !== stream) continue;
      await this.end(s.id);
      this.o.log('publisher dropped', { stream, session: s.id });
    }
  }

  // The relay tree.

  setParent(parent: ParentLink | null): void {
    this.mountpoints.setParent(parent);
  }

  // RelaySource: what this node's relay routes do for its children.

  async forward(stream: string, target: RelayTarget, by: string | null): Promise<string> {
    if (this.o.role !== 'origin') throw new EngineRefusal(404, `a ${this.o.role} forwards nothing (Janus relays: docs/webrtc.md#the-relay-tree-rtp-forwarding-into-a-mountpoint)`);
    if (!this.forwards.hasPublisher(stream)) throw new EngineRefusal(404, `${stream} is not published here`);
    this.gateway();
    return this.forwards.add(stream, target, { lease: true, by });
  }

  renew(stream: string, id: string): boolean {
    return this.forwards.renew(stream, id);
  }

  unforward(stream: string, id: string): Promise<boolean> {
    return this.forwards.remove(stream, id);
  }

  // The heartbeat.

  /** Reads the byte counters of every publisher and viewer from Janus (admin-stats.ts): at heartbeat cadence, bounded, never throws. */
  refresh(): Promise<void> {
    return this.counters.poll(
      [...this.sessions.values()].map((s) => ({ id: s.id, stream: s.stream, counts: s.kind === 'publish' ? 'in' : 'out', janusSession: s.client.session.id, janusHandle: s.client.handle.id })),
    );
  }

  /**
   * Per stream: its publisher here, and its play sessions: viewers here and the edges fed from
   * here; its media: the publisher's, with the bytes it sent and those sent to the viewers here as
   * last read; on an edge, once read, the bytes sent to its viewers since the first of them came.
   */
  streams(): EngineStream[] {
    const out = new Map<string, EngineStream & { relays: string[]; firstViewer?: number }>();
    const entry = (name: string) => {
      let e = out.get(name);
      if (!e) out.set(name, (e = { name, publishing: false, subscribers: 0, relays: [] }));
      return e;
    };
    for (const s of this.sessions.values()) {
      const e = entry(s.stream);
      if (s.kind === 'publish') Object.assign(e, { publishing: true, ...(s.media ? { media: s.media } : {}) });
      else {
        e.subscribers++;
        e.firstViewer = Math.min(e.firstViewer ?? s.since, s.since);
      }
    }
    for (const e of out.values()) {
      const counted = this.counters.of(e.name);
      if (!counted) continue;
      if (e.media) e.media = { ...e.media, ...counted };
      else if (!e.publishing && e.firstViewer !== undefined && !PUBLISHES.has(this.o.role)) e.media = { since: e.firstViewer, bytesOut: counted.bytesOut };
    }
    for (const [stream, nodes] of this.forwards.children()) {
      const e = entry(stream);
      e.relays = [...nodes];
      e.subscribers += nodes.size;
    }
    return [...out.values()].map(({ relays, firstViewer: _, ...s }) => (relays.length > 0 ? { ...s, relays } : s));
  }
}

/** The media a publisher sends, from Janus's answer: accepted sections and their payload types. */
export function publisherMedia(answer: string): PublisherMedia[] {
  const sdp = parseSdp(answer);
  const out: PublisherMedia[] = [];
  for (const [i, m] of sdp.media.entries()) {
    if (portOf(m) === 0 || (m.kind !== 'audio' && m.kind !== 'video')) continue;
    const d = directionOf(m, sdp.session);
    if (d !== 'recvonly' && d !== 'sendrecv') continue;
    out.push({ kind: m.kind, mid: midOf(m) ?? String(i) });
  }
  return out;
}

export { JanusError };
