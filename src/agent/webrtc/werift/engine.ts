// The `werift` engine (docs/webrtc.md): a forwarding unit in the agent's own process, on werift's
// WebRTC stack. An origin takes WHIP publishers and serves WHEP (to viewers in a group without
// edges, and to the edges and relays under it); an edge or relay serves WHEP, taking each stream
// from its parent with one pull however many watch it (pull.ts). Nothing is transcoded: viewers
// are answered with the codec the stream arrived in.
import { randomUUID } from 'node:crypto';
import type { RTCPeerConnection, RTCRtpCodecParameters } from 'werift';
import type { Role } from '../../../domain/vocabulary.js';
import { parseFragment, ufragOf } from '../../../domain/sdp.js';
import { EngineRefusal, type EngineSession, type EngineStream, type ParentLink, type PlayOptions, type WebRtcEngine } from '../engine.js';
import { type Kind, type Output, type Source, StreamHub } from './hub.js';
import { closeCapped, codecLike, type PeerOptions, Peers, publishCodecs } from './peers.js';
import { EdgePulls, parentKey } from './edge-pulls.js';

export interface WeriftOptions extends PeerOptions {
  role: Role;
  scope: string;
  log(msg: string, extra?: Record<string, unknown>): void;
}

interface Session {
  id: string;
  stream: string;
  kind: 'publish' | 'play';
  pc: RTCPeerConnection;
  /** The pulling node, for a play session that is one. */
  relayFor?: string;
  outputs: Output[];
}

/** How long an answered session may take to connect (ICE and DTLS) before it is ended. */
export const CONNECT_DEADLINE_MS = 15_000;

const isMedia = (k: string): k is Kind => k === 'audio' || k === 'video';
const codecOf = (codecs: readonly RTCRtpCodecParameters[]) => codecs.find((c) => !/\/rtx$/i.test(c.mimeType));

export class WeriftEngine implements WebRtcEngine {
  readonly name = 'werift';
  private readonly peers: Peers;
  private readonly sessions = new Map<string, Session>();
  private readonly hubs = new Map<string, StreamHub>();
  private parent: ParentLink | null = null;
  private stopped = false;
  private readonly pulls: EdgePulls;

  constructor(private readonly o: WeriftOptions) {
    this.peers = new Peers(o);
    this.pulls = new EdgePulls({
      peers: this.peers,
      scope: o.scope,
      log: (msg, extra) => o.log(msg, extra),
      parent: () => this.parent,
      stopped: () => this.stopped,
      hubOf: (stream) => this.hubOf(stream),
      hub: (stream) => this.hubs.get(stream),
      endOutputs: (orphans) => this.endOutputs(orphans),
      forget: (stream) => this.forget(stream),
    });
  }

  async start(): Promise<void> {}

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.allSettled([...this.sessions.keys()].map((id) => this.end(id)));
    await this.pulls.stopAll();
  }

  private hubOf(stream: string): StreamHub {
    let hub = this.hubs.get(stream);
    if (!hub) this.hubs.set(stream, (hub = new StreamHub(stream)));
    return hub;
  }

  async publish(stream: string, offer: string): Promise<EngineSession> {
    if (this.o.role !== 'origin') throw new EngineRefusal(405, `a ${this.o.role} takes no publishers`);
    if (this.publisherOf(stream)) throw new EngineRefusal(409, `stream '${stream}' is already published here`);
    const pc = this.peers.make(publishCodecs());
    const id = randomUUID();
    let sdp: string;
    try {
      sdp = await this.peers.answer(pc, offer, () => {
        for (const t of pc.getTransceivers()) t.setDirection('recvonly');
      });
    } catch (err) {
      await closeCapped(pc);
      throw refusalOf(err);
    }
    // Another publisher may have won the race while this one was answered.
    if (this.publisherOf(stream) || this.stopped) {
      await closeCapped(pc);
      throw new EngineRefusal(409, `stream '${stream}' is already published here`);
    }
    const hub = this.hubOf(stream);
    const sources: Partial<Record<Kind, Source>> = {};
    for (const t of pc.getTransceivers()) {
      const codec = codecOf(t.codecs);
      const kind = t.kind;
      if (!codec || !isMedia(kind)) continue;
      const track = t.receiver.track;
      track.onReceiveRtp.subscribe((rtp) => {
        if (hub.feeder === id) hub.forward(kind, rtp);
      });
      sources[kind] = {
        codec,
        requestKeyframe: () => {
          if (track.ssrc !== undefined) t.receiver.sendRtcpPLI(track.ssrc).catch(() => {});
        },
      };
    }
    if (Object.keys(sources).length === 0) {
      await closeCapped(pc);
      throw new EngineRefusal(422, 'the offer sends no audio or video this node takes (VP8, H.264, Opus)');
    }
    this.sessions.set(id, { id, stream, kind: 'publish', pc, outputs: [] });
    this.endOutputs(hub.feed(id, sources));
    this.watch(id, pc);
    return { id, sdp };
  }

  async play(stream: string, offer: string, options: PlayOptions = {}): Promise<EngineSession> {
    const hub = this.hubOf(stream);
    if (!hub.fed) {
      if (this.o.role === 'origin') {
        this.forget(stream);
        throw new EngineRefusal(404, `stream '${stream}' is not published here`);
      }
      await this.pulls.ensure(stream);
    }
    const codecs = hub.codecs();
    const pc = this.peers.make({
      video: codecs.video ? [codecLike(codecs.video)] : publishCodecs().video,
      audio: codecs.audio ? [codecLike(codecs.audio)] : publishCodecs().audio,
    });
    const id = randomUUID();
    const outputs: Output[] = [];
    let sdp: string;
    try {
      sdp = await this.peers.answer(pc, offer, async () => {
        for (const t of pc.getTransceivers()) {
          const codec = isMedia(t.kind) ? codecs[t.kind] : undefined;
          if (!codec || !isMedia(t.kind) || t.codecs.length === 0) {
            t.setDirection('inactive');
            continue;
          }
          const out = hub.addOutput(t.kind, codec.mimeType);
          outputs.push(out);
          t.setDirection('sendonly');
          await t.sender.replaceTrack(out.track);
          t.sender.onPictureLossIndication.subscribe(() => hub.askKeyframe());
        }
      });
    } catch (err) {
      for (const out of outputs) hub.removeOutput(out);
      await closeCapped(pc);
      this.lingerOrForget(stream);
      throw refusalOf(err);
    }
    if (outputs.length === 0 || this.stopped) {
      await closeCapped(pc);
      this.lingerOrForget(stream);
      throw new EngineRefusal(
        422,
        `the offer takes none of the codecs stream '${stream}' is in (${
          Object.values(codecs)
            .map((c) => c.mimeType)
            .join(', ') || 'none yet'
        })`,
      );
    }
    this.sessions.set(id, { id, stream, kind: 'play', pc, outputs, ...(options.relayFor ? { relayFor: options.relayFor } : {}) });
    this.pulls.keep(stream);
    pc.connectionStateChange.subscribe((state) => {
      if (state === 'connected') hub.askKeyframe();
    });
    this.watch(id, pc);
    return { id, sdp };
  }

  async patch(id: string, fragment: string): Promise<string | null> {
    const s = this.sessions.get(id);
    if (!s) throw new EngineRefusal(404, 'no such session');
    const f = parseFragment(fragment);
    if (!f.ok) throw new EngineRefusal(400, f.reason);
    // A new ufrag asks for an ICE restart, which these sessions do not do (WHIP: 405).
    const remote = ufragOf(s.pc.remoteDescription?.sdp ?? '');
    if (f.ufrag !== null && remote !== null && f.ufrag !== remote) return null;
    for (const c of f.candidates) await s.pc.addIceCandidate({ candidate: c.candidate, sdpMid: c.mid ?? undefined }).catch(() => {});
    return '';
  }

  async end(id: string): Promise<boolean> {
    const s = this.sessions.get(id);
    if (!s) return false;
    this.sessions.delete(id);
    const hub = this.hubs.get(s.stream);
    if (hub) {
      if (s.kind === 'publish') hub.unfeed(id);
      for (const out of s.outputs) hub.removeOutput(out);
    }
    await closeCapped(s.pc);
    this.lingerOrForget(s.stream);
    return true;
  }

  async dropPublisher(stream: string): Promise<void> {
    const id = this.publisherOf(stream);
    if (id) {
      this.o.log('publisher dropped', { stream });
      await this.end(id);
    }
  }

  setParent(parent: ParentLink | null): void {
    const moved = parentKey(this.parent) !== parentKey(parent);
    this.parent = parent;
    if (!moved || this.o.role === 'origin') return;
    // Streams come from the new parent now.
    this.pulls.parentChanged(parent !== null);
  }

  streams(): EngineStream[] {
    const out = new Map<string, { publishing: boolean; subscribers: number; relays: Set<string> }>();
    for (const s of this.sessions.values()) {
      const e = out.get(s.stream) ?? { publishing: false, subscribers: 0, relays: new Set<string>() };
      if (s.kind === 'publish') e.publishing = true;
      else {
        e.subscribers++;
        if (s.relayFor) e.relays.add(s.relayFor);
      }
      out.set(s.stream, e);
    }
    return [...out].map(([name, e]) => {
      const media = this.hubs.get(name)?.media();
      return { name, publishing: e.publishing, subscribers: e.subscribers, ...(e.relays.size > 0 ? { relays: [...e.relays] } : {}), ...(media ? { media } : {}) };
    });
  }

  /** The session id of the stream's publisher here, if any. */
  private publisherOf(stream: string): string | undefined {
    for (const s of this.sessions.values()) if (s.kind === 'publish' && s.stream === stream) return s.id;
    return undefined;
  }

  /**
   * A session whose connection fails or closes is ended (the peer left without a DELETE), and so
   * is one that does not connect within CONNECT_DEADLINE_MS (a client that offered and went away).
   */
  private watch(id: string, pc: RTCPeerConnection): void {
    const deadline = setTimeout(() => {
      if (pc.connectionState !== 'connected') void this.end(id);
    }, CONNECT_DEADLINE_MS);
    deadline.unref();
    pc.connectionStateChange.subscribe((state) => {
      if (state === 'connected') clearTimeout(deadline);
      if (state === 'failed' || state === 'closed') {
        clearTimeout(deadline);
        void this.end(id);
      }
    });
  }

  private endOutputs(orphans: readonly Output[]): void {
    if (orphans.length === 0) return;
    for (const s of this.sessions.values()) if (s.outputs.some((o) => orphans.includes(o))) void this.end(s.id);
  }

  /** After a session ended: an edge's idle pull lingers, then goes; a hub nothing uses goes at once. */
  private lingerOrForget(stream: string): void {
    const hub = this.hubs.get(stream);
    if (!hub || hub.outputCount > 0) return;
    if (!this.pulls.linger(stream)) this.forget(stream);
  }

  /** Drops a hub that neither feeds nor serves anyone. */
  private forget(stream: string): void {
    const hub = this.hubs.get(stream);
    if (hub && !hub.fed && hub.outputCount === 0 && !this.pulls.has(stream)) this.hubs.delete(stream);
  }
}

/** What werift's failure to take an offer means to the client. */
function refusalOf(err: unknown): EngineRefusal {
  if (err instanceof EngineRefusal) return err;
  const message = (err as Error).message ?? String(err);
  if (/negotiate codecs failed/i.test(message)) return new EngineRefusal(422, 'the offer has no codec in common with this node');
  return new EngineRefusal(400, `the offer could not be applied: ${message.slice(0, 200)}`);
}
