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
import { Pull, PullRefused } from './pull.js';

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

interface PullState {
  pull: Pull | null;
  /** The hub's feeder name of the current pull: each pull has its own, so that only it feeds the stream. */
  feeder: string;
  opening: Promise<void> | null;
  retry: NodeJS.Timeout | null;
  linger: NodeJS.Timeout | null;
  failures: number;
}

/** How long an answered session may take to connect (ICE and DTLS) before it is ended. */
export const CONNECT_DEADLINE_MS = 15_000;
/** An edge keeps a pull this long after its last viewer left: a viewer who reloads finds it still there. */
export const PULL_LINGER_MS = 5000;
const RETRY_MS = [500, 1000, 2000, 5000];

const isMedia = (k: string): k is Kind => k === 'audio' || k === 'video';
const codecOf = (codecs: readonly RTCRtpCodecParameters[]) => codecs.find((c) => !/\/rtx$/i.test(c.mimeType));
const hostOf = (address: string) => (address.includes(':') && !address.startsWith('[') ? `[${address}]` : address);

export class WeriftEngine implements WebRtcEngine {
  readonly name = 'werift';
  private readonly peers: Peers;
  private readonly sessions = new Map<string, Session>();
  private readonly hubs = new Map<string, StreamHub>();
  private readonly pulls = new Map<string, PullState>();
  /** Pulls opened so far: each one's feeder name. */
  private pullsOpened = 0;
  private parent: ParentLink | null = null;
  private stopped = false;

  constructor(private readonly o: WeriftOptions) {
    this.peers = new Peers(o);
  }

  async start(): Promise<void> {}

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.allSettled([...this.sessions.keys()].map((id) => this.end(id)));
    await Promise.allSettled([...this.pulls.keys()].map((s) => this.stopPull(s)));
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
      await this.ensurePull(stream);
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
    this.clearLinger(stream);
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
    // Streams come from the new parent now: pulls from the old one end, those with viewers start again.
    for (const stream of [...this.pulls.keys()]) {
      const hub = this.hubs.get(stream);
      void this.stopPull(stream).then(() => {
        if (parent && hub && hub.outputCount > 0) this.retryPull(stream, 0);
      });
    }
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

  /** The stream's pull from the parent, opened if it is not (viewers of the same stream wait for the same one). */
  private async ensurePull(stream: string): Promise<void> {
    let st = this.pulls.get(stream);
    if (!st) this.pulls.set(stream, (st = { pull: null, feeder: '', opening: null, retry: null, linger: null, failures: 0 }));
    if (st.pull) return;
    const state = st;
    state.opening ??= this.openPull(stream, state).finally(() => {
      state.opening = null;
    });
    await state.opening;
  }

  private async openPull(stream: string, st: PullState): Promise<void> {
    const parent = this.parent;
    if (!parent) throw new EngineRefusal(503, 'this node has no parent yet to take the stream from');
    const hub = this.hubOf(stream);
    const url = `http://${hostOf(parent.address)}:${parent.port}/whep/${this.o.scope}/${stream}`;
    // Its own name: a pull lost or replaced must never feed the stream beside the one after it
    // (two sources' packets interleaved reach viewers as a trickle they cannot play).
    const feeder = `pull ${++this.pullsOpened}`;
    let opened: Awaited<ReturnType<typeof Pull.open>>;
    try {
      opened = await Pull.open(
        this.peers,
        { url, ...(parent.credential ? { credential: parent.credential } : {}) },
        (kind, rtp) => {
          if (hub.feeder === feeder) hub.forward(kind, rtp);
        },
        (why) => this.pullLost(stream, feeder, why),
      );
    } catch (err) {
      st.failures++;
      if (err instanceof PullRefused && err.status === 404) throw new EngineRefusal(404, `stream '${stream}' is not published at its origin`);
      this.o.log('pull from the parent failed', { stream, parent: parent.nodeId, error: (err as Error).message });
      throw new EngineRefusal(503, `the stream could not be taken from this node's parent (${parent.nodeId})`);
    }
    if (this.pulls.get(stream) !== st || parentKey(this.parent) !== parentKey(parent) || this.stopped) {
      await opened.pull.close();
      throw new EngineRefusal(503, 'this node changed parents while taking the stream; try again');
    }
    st.pull = opened.pull;
    st.feeder = feeder;
    st.failures = 0;
    this.o.log('pull from the parent opened', { stream, parent: parent.nodeId });
    this.endOutputs(hub.feed(feeder, opened.sources));
  }

  private pullLost(stream: string, feeder: string, why: string): void {
    const st = this.pulls.get(stream);
    // Not the stream's current pull (one replaced or stopped before it was lost): nothing of it feeds.
    if (!st || st.feeder !== feeder) return;
    st.pull = null;
    this.hubs.get(stream)?.unfeed(st.feeder);
    this.o.log('pull from the parent lost', { stream, why });
    if ((this.hubs.get(stream)?.outputCount ?? 0) > 0) this.retryPull(stream, st.failures);
    else void this.stopPull(stream);
  }

  /** Opens the pull again in the background while the stream has viewers, waiting longer after each failure. */
  private retryPull(stream: string, failures: number): void {
    let st = this.pulls.get(stream);
    if (!st) this.pulls.set(stream, (st = { pull: null, feeder: '', opening: null, retry: null, linger: null, failures }));
    if (st.retry || this.stopped) return;
    const state = st;
    state.retry = setTimeout(
      () => {
        state.retry = null;
        if ((this.hubs.get(stream)?.outputCount ?? 0) === 0) return void this.stopPull(stream);
        this.ensurePull(stream).catch(() => this.retryPull(stream, state.failures));
      },
      RETRY_MS[Math.min(failures, RETRY_MS.length - 1)],
    );
    state.retry.unref();
  }

  private async stopPull(stream: string): Promise<void> {
    const st = this.pulls.get(stream);
    if (!st) return;
    this.pulls.delete(stream);
    if (st.retry) clearTimeout(st.retry);
    if (st.linger) clearTimeout(st.linger);
    this.hubs.get(stream)?.unfeed(st.feeder);
    await st.pull?.close();
    this.forget(stream);
  }

  private clearLinger(stream: string): void {
    const st = this.pulls.get(stream);
    if (st?.linger) {
      clearTimeout(st.linger);
      st.linger = null;
    }
  }

  /** After a session ended: an edge's idle pull lingers, then goes; a hub nothing uses goes at once. */
  private lingerOrForget(stream: string): void {
    const hub = this.hubs.get(stream);
    if (!hub || hub.outputCount > 0) return;
    const st = this.pulls.get(stream);
    if (st && !st.linger && !this.stopped) {
      st.linger = setTimeout(() => {
        st.linger = null;
        if ((this.hubs.get(stream)?.outputCount ?? 0) === 0) void this.stopPull(stream);
      }, PULL_LINGER_MS);
      st.linger.unref();
      return;
    }
    if (!st) this.forget(stream);
  }

  /** Drops a hub that neither feeds nor serves anyone. */
  private forget(stream: string): void {
    const hub = this.hubs.get(stream);
    if (hub && !hub.fed && hub.outputCount === 0 && !this.pulls.has(stream)) this.hubs.delete(stream);
  }
}

/** Which parent this is: a new credential for the same parent changes nothing. */
const parentKey = (p: ParentLink | null) => (p ? `${p.nodeId} ${p.address} ${p.port}` : '');

/** What werift's failure to take an offer means to the client. */
function refusalOf(err: unknown): EngineRefusal {
  if (err instanceof EngineRefusal) return err;
  const message = (err as Error).message ?? String(err);
  if (/negotiate codecs failed/i.test(message)) return new EngineRefusal(422, 'the offer has no codec in common with this node');
  return new EngineRefusal(400, `the offer could not be applied: ${message.slice(0, 200)}`);
}
