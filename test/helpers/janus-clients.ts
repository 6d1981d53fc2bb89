// Real WebRTC clients for the Janus tests: a werift WHIP-style publisher fed with VP8 that ffmpeg
// encodes from its test source, and a werift WHEP-style viewer that counts RTP packets and VP8
// keyframes. A client offers one address only, one the Janus node's namespace reaches (Janus gathers
// no loopback candidates: docs/webrtc-janus.md). Everything is closed at the test's teardown.
import { createSocket, type Socket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import type { ExecutionContext } from 'ava';
import { MediaStreamTrack, RTCPeerConnection, RtpPacket, useOPUS, useVP8 } from 'werift';
import { Processes, type Running } from './media.js';

/** Exchanges an offer for an answer (the engine directly, or WHIP/WHEP over HTTP). */
export type Signal = (offer: string) => Promise<string>;

function peer(address: string): RTCPeerConnection {
  return new RTCPeerConnection({
    // werift leaves out addresses of interfaces it thinks internal; this one it must offer, and only it.
    iceAdditionalHostAddresses: [address],
    iceInterfaceAddresses: { udp4: address },
    iceUseIpv6: false,
    codecs: { video: [useVP8({ payloadType: 96 })], audio: [useOPUS({ payloadType: 111 })] },
  });
}

/** The offer once gathering is complete, with only `address`'s candidates (werift trap 5 in docs/webrtc-janus.md). */
async function completeOffer(pc: RTCPeerConnection, address: string): Promise<string> {
  await pc.setLocalDescription(await pc.createOffer());
  if (pc.iceGatheringState !== 'complete') {
    await new Promise<void>((resolve) => {
      const { unSubscribe } = pc.iceGatheringStateChange.subscribe((s) => {
        if (s === 'complete') {
          unSubscribe();
          resolve();
        }
      });
    });
  }
  const sdp = pc.localDescription!.sdp;
  return sdp
    .split('\r\n')
    .filter((l) => !l.startsWith('a=candidate:') || l.split(' ')[4] === address)
    .join('\r\n');
}

/** Resolves when the connection is up; rejects if it fails. */
function connected(pc: RTCPeerConnection): Promise<void> {
  return new Promise((resolve, reject) => {
    if (pc.connectionState === 'connected') return resolve();
    const { unSubscribe } = pc.connectionStateChange.subscribe((s) => {
      if (s === 'connected') {
        unSubscribe();
        resolve();
      } else if (s === 'failed' || s === 'closed') {
        unSubscribe();
        reject(new Error(`peer connection ${s}`));
      }
    });
  });
}

/** pc.close() can hang (werift): capped. */
async function closePeer(pc: RTCPeerConnection): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([pc.close().catch(() => undefined), new Promise((r) => (timer = setTimeout(r, 2000)))]);
  clearTimeout(timer);
}

/** VP8 RTP from ffmpeg's test source (25 fps, a keyframe a second), arriving on a local socket. */
export async function vp8Source(t: ExecutionContext, ffmpeg: string): Promise<{ socket: Socket; ffmpeg: Running }> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => socket.close(() => resolve())));
  const port = (socket.address() as AddressInfo).port;
  const p = new Processes(t);
  const run = p.start(ffmpeg, [
    ...['-nostdin', '-hide_banner', '-loglevel', 'error', '-re', '-f', 'lavfi', '-i', 'testsrc=size=320x240:rate=25'],
    ...['-c:v', 'libvpx', '-deadline', 'realtime', '-g', '25', '-b:v', '300k', '-an', '-f', 'rtp', `rtp://127.0.0.1:${port}?pkt_size=1200`],
  ]);
  return { socket, ffmpeg: run };
}

export interface Publisher {
  pc: RTCPeerConnection;
  answer: string;
  connected: Promise<void>;
  close(): Promise<void>;
}

/** A publisher of the source's VP8, offering `address`; its answer from `signal`. */
export async function publisher(t: ExecutionContext, source: { socket: Socket }, address: string, signal: Signal): Promise<Publisher> {
  const pc = peer(address);
  t.teardown(() => closePeer(pc));
  const track = new MediaStreamTrack({ kind: 'video' });
  pc.addTransceiver(track, { direction: 'sendonly' });
  const onPacket = (buf: Buffer) => {
    const rtp = RtpPacket.deSerialize(buf);
    // ffmpeg's header extensions mean nothing to the receiver: dropped; werift sets PT, SSRC and sequence.
    rtp.header.extension = false;
    rtp.header.extensions = [];
    track.writeRtp(rtp);
  };
  source.socket.on('message', onPacket);
  t.teardown(() => void source.socket.off('message', onPacket));
  const up = connected(pc);
  up.catch(() => undefined);
  const answer = await signal(await completeOffer(pc, address));
  await pc.setRemoteDescription({ type: 'answer', sdp: answer });
  return { pc, answer, connected: up, close: () => closePeer(pc) };
}

export interface Viewer {
  pc: RTCPeerConnection;
  answer: string;
  connected: Promise<void>;
  packets: number;
  keyframes: number;
  /** Resolves once `packets` RTP packets and `keyframes` VP8 keyframes came. */
  received(packets: number, keyframes: number): Promise<void>;
  close(): Promise<void>;
}

/** Whether an RTP payload starts a VP8 keyframe: descriptor, then the P bit clear and the start code 9d 01 2a. */
export function isVp8Keyframe(payload: Buffer): boolean {
  if (payload.length < 1) return false;
  let i = 1;
  const b0 = payload[0]!;
  const start = (b0 & 0x10) !== 0 && (b0 & 0x07) === 0;
  if (b0 & 0x80) {
    const x = payload[i++] ?? 0;
    if (x & 0x80) i += (payload[i] ?? 0) & 0x80 ? 2 : 1;
    if (x & 0x40) i++;
    if (x & 0x30) i++;
  }
  return start && payload.length >= i + 6 && (payload[i]! & 0x01) === 0 && payload[i + 3] === 0x9d && payload[i + 4] === 0x01 && payload[i + 5] === 0x2a;
}

/** A viewer offering to receive video (and audio, with `audio`), at `address`; its answer from `signal`. */
export async function viewer(t: ExecutionContext, address: string, signal: Signal, options: { audio?: boolean } = {}): Promise<Viewer> {
  const pc = peer(address);
  t.teardown(() => closePeer(pc));
  if (options.audio) pc.addTransceiver('audio', { direction: 'recvonly' });
  pc.addTransceiver('video', { direction: 'recvonly' });
  const waiting: Array<{ packets: number; keyframes: number; resolve: () => void }> = [];
  const v: Viewer = {
    pc,
    answer: '',
    connected: connected(pc),
    packets: 0,
    keyframes: 0,
    received: (packets, keyframes) =>
      new Promise((resolve) => {
        if (v.packets >= packets && v.keyframes >= keyframes) return resolve();
        waiting.push({ packets, keyframes, resolve });
      }),
    close: () => closePeer(pc),
  };
  v.connected.catch(() => undefined);
  pc.onTrack.subscribe((track) => {
    if (track.kind !== 'video') return;
    track.onReceiveRtp.subscribe((rtp) => {
      v.packets++;
      if (isVp8Keyframe(rtp.payload)) v.keyframes++;
      for (const w of [...waiting]) {
        if (v.packets >= w.packets && v.keyframes >= w.keyframes) {
          waiting.splice(waiting.indexOf(w), 1);
          w.resolve();
        }
      }
    });
  });
  v.answer = await signal(await completeOffer(pc, address));
  await pc.setRemoteDescription({ type: 'answer', sdp: v.answer });
  return v;
}

/** A promise bounded by `ms`: the test fails with `what` instead of hanging (a bound, not a synchronisation). */
export async function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
