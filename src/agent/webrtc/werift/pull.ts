// An edge (or relay) taking a stream from its parent (docs/webrtc.md, "The tree"): a WHEP client
// of the parent's agent, presenting the relay credential the control plane gave this node in its
// heartbeat reply, so that the parent's admission gate lets it play any stream. The tracks it
// receives become the stream's source on this node; its keyframe requests go up the same way a
// viewer's go to a publisher.
import type { RTCPeerConnection, RTCRtpTransceiver, RtpPacket } from 'werift';
import { SDP_TYPE } from '../../../domain/sdp.js';
import type { Kind, Source } from './hub.js';
import { closeCapped, type Peers, publishCodecs } from './peers.js';

/** How long a pull may take to connect before it counts as lost. */
const CONNECT_DEADLINE_MS = 15_000;

/** How long the parent may take to answer an offer. */
const ANSWER_CAP_MS = 8000;
const MAX_ANSWER_BYTES = 64 * 1024;

/** The parent answered with an error: its status (404: not published there). */
export class PullRefused extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'PullRefused';
  }
}

export interface PullTarget {
  /** The parent's WHEP endpoint for the stream. */
  url: string;
  credential?: string;
}

const codecOf = (t: RTCRtpTransceiver) => t.codecs.find((c) => !/\/rtx$/i.test(c.mimeType));

export class Pull {
  private resource: string | null = null;
  private closed = false;

  private constructor(
    private readonly pc: RTCPeerConnection,
    readonly target: PullTarget,
  ) {}

  /**
   * Offers to the parent and applies its answer. `forward` gets every packet; `lost` is called
   * once, with why, when the connection fails, closes or does not connect (not after close()).
   */
  static async open(peers: Peers, target: PullTarget, forward: (kind: Kind, rtp: RtpPacket) => void, lost: (why: string) => void): Promise<{ pull: Pull; sources: Partial<Record<Kind, Source>> }> {
    const pc = peers.make(publishCodecs());
    const pull = new Pull(pc, target);
    try {
      for (const kind of ['video', 'audio'] as const) pc.addTransceiver(kind, { direction: 'recvonly' });
      const offer = await peers.offer(pc);
      const res = await fetch(target.url, {
        method: 'POST',
        headers: { 'content-type': SDP_TYPE, ...(target.credential ? { authorization: `Bearer ${target.credential}` } : {}) },
        body: offer,
        signal: AbortSignal.timeout(ANSWER_CAP_MS),
        redirect: 'error',
      });
      const text = await res.text();
      if (res.status !== 201) throw new PullRefused(res.status, `the parent answered ${res.status}: ${text.slice(0, 200)}`);
      if (text.length > MAX_ANSWER_BYTES) throw new PullRefused(502, 'the parent answered an oversized SDP');
      const location = res.headers.get('location');
      pull.resource = location ? new URL(location, target.url).toString() : null;
      await pc.setRemoteDescription({ type: 'answer', sdp: text });
      const sources: Partial<Record<Kind, Source>> = {};
      for (const t of pc.getTransceivers()) {
        const codec = codecOf(t);
        if (!codec || (t.kind !== 'audio' && t.kind !== 'video') || t.currentDirection === 'inactive') continue;
        const kind = t.kind;
        const track = t.receiver.track;
        track.onReceiveRtp.subscribe((rtp) => forward(kind, rtp));
        sources[kind] = {
          codec,
          requestKeyframe: () => {
            if (track.ssrc !== undefined) t.receiver.sendRtcpPLI(track.ssrc).catch(() => {});
          },
        };
      }
      let packets = 0;
      for (const t of pc.getTransceivers()) t.receiver.track.onReceiveRtp.subscribe(() => packets++);
      const gone = (why: string) => {
        if (pull.closed) return;
        pull.closed = true;
        clearTimeout(deadline);
        // How much came before it was lost tells a pull that never flowed from one that stopped.
        lost(`${why} (${packets} RTP packets taken)`);
        // Ended for good, at the parent too: one given up on while it still connects must not go on.
        void pull.close();
      };
      // A pull that does not connect is as good as lost: the engine opens another.
      const deadline = setTimeout(() => {
        if (pc.connectionState !== 'connected') gone(`not connected within ${CONNECT_DEADLINE_MS} ms (${pc.connectionState})`);
      }, CONNECT_DEADLINE_MS);
      deadline.unref();
      pc.connectionStateChange.subscribe((state) => {
        if (state === 'connected') clearTimeout(deadline);
        if (state === 'failed' || state === 'closed') gone(state);
      });
      return { pull, sources };
    } catch (err) {
      await pull.close();
      throw err;
    }
  }

  /** Ends the pull: the parent's session is deleted (best effort), the connection closed. */
  async close(): Promise<void> {
    this.closed = true;
    const resource = this.resource;
    this.resource = null;
    await Promise.allSettled([
      resource
        ? fetch(resource, {
            method: 'DELETE',
            ...(this.target.credential ? { headers: { authorization: `Bearer ${this.target.credential}` } } : {}),
            signal: AbortSignal.timeout(2000),
            redirect: 'error',
          }).then((r) => r.body?.cancel())
        : Promise.resolve(),
      closeCapped(this.pc),
    ]);
  }
}
