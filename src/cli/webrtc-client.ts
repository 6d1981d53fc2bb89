// Real WebRTC clients for the WebRTC demo, the tests and the bench (docs/webrtc.md): a WHIP publisher sending VP8 that
// ffmpeg encodes from its test source (ffmpeg → RTP on a local UDP socket → a werift track), and
// a WHEP viewer that counts the RTP packets and VP8 keyframes it receives. Both are werift peer
// connections with ICE on a loopback address (werift leaves loopback out unless told). Like a
// player, each notices when its media stops (no RTP, or no RTCP from the server, for a while) so
// that it can look the stream up again. Every wait is bounded; every process and socket stops.
import { type ChildProcess, spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { MediaStreamTrack, RTCPeerConnection, RtpPacket } from 'werift';
import { vp8Keyframe } from '../agent/webrtc/vp8.js';
import { withoutStun } from '../agent/webrtc/werift/peers.js';

export const SDP = 'application/sdp';

/** What a WHIP or WHEP POST answered. */
export interface Answered {
  status: number;
  location: string | null;
  /** The proxy's header naming the node it chose. */
  node: string | null;
  text: string;
  /** Milliseconds from the POST to the answer. */
  ms: number;
}

/** ffmpeg's test pattern as VP8 RTP, 320x240 at 25 fps, a keyframe every second, for as long as it runs. */
export class VideoSource {
  private readonly listeners = new Set<(rtp: RtpPacket) => void>();
  private constructor(
    private readonly proc: ChildProcess,
    private readonly socket: dgram.Socket,
  ) {}

  static async start(ffmpeg = 'ffmpeg'): Promise<VideoSource> {
    const socket = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
    const port = socket.address().port;
    const proc = spawn(
      ffmpeg,
      [
        ...['-hide_banner', '-loglevel', 'error', '-nostdin', '-re', '-f', 'lavfi', '-i', 'testsrc=size=320x240:rate=25'],
        ...['-c:v', 'libvpx', '-deadline', 'realtime', '-cpu-used', '8', '-g', '25', '-b:v', '300k', '-an', '-f', 'rtp', `rtp://127.0.0.1:${port}?pkt_size=1200`],
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const source = new VideoSource(proc, socket);
    socket.on('message', (buf) => {
      let rtp: RtpPacket;
      try {
        rtp = RtpPacket.deSerialize(buf);
      } catch {
        return;
      }
      // werift re-stamps payload type, SSRC and sequence; extensions would carry ffmpeg's ids.
      rtp.header.extension = false;
      rtp.header.extensions = [];
      for (const l of source.listeners) l(rtp);
    });
    return source;
  }

  onPacket(listener: (rtp: RtpPacket) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async stop(): Promise<void> {
    this.listeners.clear();
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      const exited = new Promise((r) => this.proc.once('exit', r));
      this.proc.kill('SIGKILL');
      await exited;
    }
    await new Promise<void>((r) => this.socket.close(() => r()));
  }
}

function peer(address: string): RTCPeerConnection {
  // max-bundle: werift leaks the sockets of the transports a bundled answer makes redundant.
  return new RTCPeerConnection({ bundlePolicy: 'max-bundle', iceServers: [], iceUseIpv6: false, iceInterfaceAddresses: { udp4: address }, iceAdditionalHostAddresses: [address] });
}

/** Our offer, gathered without a STUN server (werift would ask Google's, and wait for it). */
async function offer(pc: RTCPeerConnection): Promise<void> {
  const description = await pc.createOffer();
  withoutStun(pc);
  await pc.setLocalDescription(description);
}

async function gathered(pc: RTCPeerConnection): Promise<string> {
  if (pc.iceGatheringState !== 'complete') {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('ICE gathering did not complete')), 5000);
      pc.iceGatheringStateChange.subscribe((s) => {
        if (s === 'complete') {
          clearTimeout(timer);
          resolve();
        }
      });
    });
  }
  // Only the address ICE is bound to (werift otherwise lists every interface's).
  const address = pc.config.iceAdditionalHostAddresses?.[0];
  return pc
    .localDescription!.sdp.split('\r\n')
    .filter((l) => !l.startsWith('a=candidate:') || (address !== undefined && l.split(' ')[4] === address))
    .join('\r\n');
}

async function post(url: string, offer: string, headers: Record<string, string>): Promise<Answered> {
  const started = performance.now();
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': SDP, ...headers }, body: offer, signal: AbortSignal.timeout(15_000) });
  const text = await res.text();
  const location = res.headers.get('location');
  return {
    status: res.status,
    location: location ? new URL(location, url).toString() : null,
    node: res.headers.get('x-switchyard-node'),
    text,
    ms: performance.now() - started,
  };
}

/** Resolves when `pc` connects; rejects when it fails or `ms` pass. */
function connected(pc: RTCPeerConnection, ms: number): Promise<void> {
  if (pc.connectionState === 'connected') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not connected within ${ms} ms (${pc.connectionState})`)), ms);
    pc.connectionStateChange.subscribe((s) => {
      if (s === 'connected') {
        clearTimeout(timer);
        resolve();
      } else if (s === 'failed' || s === 'closed') {
        clearTimeout(timer);
        reject(new Error(`connection ${s}`));
      }
    });
  });
}

/** Ends a session as a WHIP/WHEP client does: DELETE on its Location (best effort: the server may be gone). */
async function deleteSession(location: string | null | undefined): Promise<void> {
  if (!location) return;
  await fetch(location, { method: 'DELETE', signal: AbortSignal.timeout(3000) })
    .then((r) => r.body?.cancel())
    .catch(() => {});
}

/** Closes without waiting on werift's close for ever. */
async function closeCapped(pc: RTCPeerConnection): Promise<void> {
  await Promise.race([pc.close().catch(() => {}), new Promise((r) => setTimeout(r, 2000).unref())]);
}

/** Calls `lost` once, when `silent()` has been true for `ms` or the connection fails or closes. */
function watchSilence(pc: RTCPeerConnection, lastHeard: () => number, ms: number, lost: () => void): () => void {
  let done = false;
  const fire = () => {
    if (done) return;
    done = true;
    clearInterval(timer);
    lost();
  };
  const timer = setInterval(() => {
    if (performance.now() - lastHeard() > ms) fire();
  }, 100);
  timer.unref();
  pc.connectionStateChange.subscribe((s) => {
    if (s === 'failed' || s === 'closed') fire();
  });
  return () => {
    done = true;
    clearInterval(timer);
  };
}

export interface ClientOptions {
  /** The address the client's ICE runs on (a loopback one by default). */
  address?: string;
  headers?: Record<string, string>;
  /** How long without media (viewer) or RTCP (publisher) means the connection is gone. */
  silenceMs?: number;
}

/**
 * What a WHIP publisher and a WHEP viewer share: one session at a time, offered with every
 * candidate, answered, connected; noticed lost when `heard()` goes quiet for silenceMs or the
 * connection fails; ended with DELETE on its Location.
 */
abstract class WebRtcClient {
  protected pc: RTCPeerConnection | null = null;
  private unwatch = () => {};
  answered: Answered | null = null;
  protected lastHeard = 0;
  private readonly lostHandlers = new Set<() => void>();

  /** Sets the new connection up (its transceivers) before the offer; after connecting, `started` runs. */
  protected async session(url: string, o: ClientOptions, prepare: (pc: RTCPeerConnection) => void, started: (pc: RTCPeerConnection) => void = () => {}): Promise<Answered> {
    await this.close();
    const pc = peer(o.address ?? '127.0.0.1');
    prepare(pc);
    await offer(pc);
    const answered = await post(url, await gathered(pc), o.headers ?? {});
    this.answered = answered;
    if (answered.status !== 201) {
      await closeCapped(pc);
      return answered;
    }
    this.pc = pc;
    await pc.setRemoteDescription({ type: 'answer', sdp: answered.text });
    await connected(pc, 10_000);
    this.lastHeard = performance.now();
    started(pc);
    this.unwatch = watchSilence(
      pc,
      () => this.lastHeard,
      o.silenceMs ?? 3000,
      () => {
        for (const l of this.lostHandlers) l();
      },
    );
    return answered;
  }

  /** Resolves when the session goes quiet for silenceMs (no media, or no RTCP) or its connection fails. */
  lost(): Promise<void> {
    return new Promise((resolve) => {
      const once = () => {
        this.lostHandlers.delete(once);
        resolve();
      };
      this.lostHandlers.add(once);
    });
  }

  /** Ends the session (DELETE on its Location) and the connection. */
  async close(): Promise<void> {
    this.unwatch();
    const pc = this.pc;
    this.pc = null;
    if (pc) await Promise.all([deleteSession(this.answered?.location), closeCapped(pc)]);
  }
}

/** A WHIP publisher of a VideoSource; lost when the server's RTCP stops. */
export class WhipPublisher extends WebRtcClient {
  private unfeed = () => {};

  constructor(private readonly source: VideoSource) {
    super();
  }

  /** POSTs an offer to `url`; on 201 applies the answer, waits until connected and sends. Answers what the POST answered. */
  connect(url: string, o: ClientOptions = {}): Promise<Answered> {
    const track = new MediaStreamTrack({ kind: 'video' });
    return this.session(
      url,
      o,
      (pc) => {
        pc.addTransceiver(track, { direction: 'sendonly' });
      },
      (pc) => {
        pc.getTransceivers()[0]!.sender.onRtcp.subscribe(() => {
          this.lastHeard = performance.now();
        });
        this.unfeed = this.source.onPacket((rtp) => track.writeRtp(rtp));
      },
    );
  }

  override async close(): Promise<void> {
    this.unfeed();
    await super.close();
  }
}

/** A WHEP viewer counting what arrives; lost when its RTP stops. */
export class WhepViewer extends WebRtcClient {
  packets = 0;
  keyframes = 0;
  size: { width: number; height: number } | null = null;
  /** Milliseconds from connect() to the first RTP packet, and to the first keyframe, when they came. */
  firstPacketMs: number | null = null;
  firstFrameMs: number | null = null;
  private waiters = new Set<() => void>();

  /** POSTs an offer for video (and audio) to `url`; on 201 applies the answer and waits until connected. */
  connect(url: string, o: ClientOptions = {}): Promise<Answered> {
    const started = performance.now();
    this.packets = 0;
    this.keyframes = 0;
    this.firstPacketMs = null;
    this.firstFrameMs = null;
    return this.session(url, o, (pc) => {
      pc.addTransceiver('video', { direction: 'recvonly' });
      pc.addTransceiver('audio', { direction: 'recvonly' });
      pc.onTrack.subscribe((track) => {
        if (track.kind !== 'video') return;
        track.onReceiveRtp.subscribe((rtp) => {
          this.packets++;
          this.lastHeard = performance.now();
          this.firstPacketMs ??= this.lastHeard - started;
          const kf = vp8Keyframe(rtp.payload);
          if (kf) {
            this.keyframes++;
            this.size = kf;
            this.firstFrameMs ??= performance.now() - started;
          }
          for (const w of this.waiters) w();
        });
      });
    });
  }

  /** Resolves once `packets` RTP packets and `keyframes` keyframes have arrived since connect(); rejects after `ms`. */
  media(packets: number, keyframes: number, ms = 15_000): Promise<void> {
    if (this.packets >= packets && this.keyframes >= keyframes) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        // Said so that a failure shows which side stopped: the media, or the connection.
        const silent = this.packets === 0 ? 'none came' : `the last came ${Math.round(performance.now() - this.lastHeard)} ms ago`;
        reject(new Error(`${this.packets} packets and ${this.keyframes} keyframes after ${ms} ms (wanted ${packets} and ${keyframes}; ${silent}; connection ${this.pc?.connectionState ?? 'closed'})`));
      }, ms);
      const check = () => {
        if (this.packets >= packets && this.keyframes >= keyframes) {
          clearTimeout(timer);
          this.waiters.delete(check);
          resolve();
        }
      };
      this.waiters.add(check);
    });
  }
}
