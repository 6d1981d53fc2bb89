// werift's peer connections as a node makes them (docs/webrtc.md): ICE on the node's own address
// only (werift leaves loopback out of its ICE addresses and, bound to one address, still
// advertises every interface's), candidates gathered in full before an answer leaves (WHIP and
// WHEP answers carry them all: no trickle from the node), and a close that cannot hang.
import { RTCPeerConnection, RTCRtpCodecParameters, type RTCPeerConnectionConfig } from 'werift';
import { candidatesOn } from '../../../domain/sdp.js';

export interface PeerOptions {
  /** The address the node listens on (its private one): ICE binds there. */
  address: string;
  /** The address clients are told (a public one in front of a private one), when not `address`. */
  advertised?: string;
  /** UDP ports ICE may bind, for firewalls: [min, max]. */
  portRange?: [number, number];
}

/** How long a close may take before the session is let go anyway (werift's can hang). */
export const CLOSE_CAP_MS = 2000;
/** How long gathering may take: host candidates only, so it ends at once unless something is wrong. */
const GATHER_CAP_MS = 5000;

const feedback = [{ type: 'nack' }, { type: 'nack', parameter: 'pli' }, { type: 'ccm', parameter: 'fir' }, { type: 'goog-remb' }];

/** What publishers may send: VP8 or H.264 (baseline, packetization mode 1) video, Opus audio. Forwarded as sent. */
export function publishCodecs(): NonNullable<RTCPeerConnectionConfig['codecs']> {
  return {
    video: [
      new RTCRtpCodecParameters({ mimeType: 'video/VP8', clockRate: 90000, rtcpFeedback: feedback }),
      new RTCRtpCodecParameters({ mimeType: 'video/H264', clockRate: 90000, rtcpFeedback: feedback, parameters: 'level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f' }),
    ],
    audio: [new RTCRtpCodecParameters({ mimeType: 'audio/opus', clockRate: 48000, channels: 2 })],
  };
}

/** A codec as another peer connection may offer it (werift gives each its payload type from the offer). */
export function codecLike(c: RTCRtpCodecParameters): RTCRtpCodecParameters {
  return new RTCRtpCodecParameters({
    mimeType: c.mimeType,
    clockRate: c.clockRate,
    ...(c.channels !== undefined ? { channels: c.channels } : {}),
    ...(c.parameters !== undefined ? { parameters: c.parameters } : {}),
    rtcpFeedback: c.rtcpFeedback,
  });
}

export class Peers {
  constructor(private readonly o: PeerOptions) {}

  /** A peer connection whose ICE runs on the node's address. */
  make(codecs: RTCPeerConnectionConfig['codecs'] = publishCodecs()): RTCPeerConnection {
    const any = this.o.address === '0.0.0.0' || this.o.address === '::';
    return new RTCPeerConnection({
      codecs,
      // One transport for every media section: werift drops the others of an offer when the answer
      // bundles them without closing their sockets.
      bundlePolicy: 'max-bundle',
      iceServers: [],
      iceUseIpv6: false,
      ...(any ? {} : { iceInterfaceAddresses: { udp4: this.o.address }, iceAdditionalHostAddresses: [this.o.address] }),
      ...(this.o.portRange ? { icePortRange: this.o.portRange } : {}),
    });
  }

  /** Our local description once every candidate is in it, with only those clients can reach. */
  async complete(pc: RTCPeerConnection): Promise<string> {
    if (pc.iceGatheringState !== 'complete') {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('ICE gathering did not complete')), GATHER_CAP_MS);
        const { unSubscribe } = pc.iceGatheringStateChange.subscribe((state) => {
          if (state !== 'complete') return;
          clearTimeout(timer);
          unSubscribe();
          resolve();
        });
      });
    }
    const sdp = pc.localDescription?.sdp ?? '';
    return candidatesOn(sdp, this.o.address, this.o.advertised ?? this.o.address);
  }

  /** Answers a remote offer: the answer with all candidates. `prepare` runs between the two descriptions (tracks, directions). */
  async answer(pc: RTCPeerConnection, offer: string, prepare: () => void | Promise<void> = () => {}): Promise<string> {
    await pc.setRemoteDescription({ type: 'offer', sdp: offer });
    await prepare();
    const answer = await pc.createAnswer();
    withoutStun(pc);
    await pc.setLocalDescription(answer);
    return this.complete(pc);
  }

  /** An offer of our own, candidates included (an edge pulling from its parent). */
  async offer(pc: RTCPeerConnection): Promise<string> {
    const offer = await pc.createOffer();
    withoutStun(pc);
    await pc.setLocalDescription(offer);
    return this.complete(pc);
  }
}

/**
 * Gathering without a STUN server. werift's ICE asks Google's whenever none is configured (even
 * with `iceServers: []`), and waits up to 5 s for it where it cannot be reached: every answer
 * would wait with it. A node tells clients its own address (or SWITCHYARD_NODE_PUBLIC_ADDRESS),
 * which is what a server-reflexive candidate would find out; its transports exist once the
 * descriptions are made, before gathering starts.
 */
export function withoutStun(pc: RTCPeerConnection): void {
  for (const t of pc.iceTransports) {
    const connection = (t as unknown as { connection?: { stunServer?: unknown } }).connection;
    if (connection) connection.stunServer = undefined;
  }
}

/** Closes a peer connection, waiting at most CLOSE_CAP_MS: werift's close can hang on a dead transport. */
export async function closeCapped(pc: RTCPeerConnection): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    pc.close().catch(() => {}),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, CLOSE_CAP_MS);
    }),
  ]);
  clearTimeout(timer);
}
