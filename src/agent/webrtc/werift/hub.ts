// One stream on a werift node: where its RTP comes from (the publisher's tracks on an origin, the
// pull from the parent on an edge or relay) and the tracks of everyone playing it (viewers, and
// the nodes that pull it from here). A forwarding unit: packets are passed on as they came, never
// decoded; each viewer's sender gives them its own SSRC, payload type and sequence (werift's
// sender does that). Keyframe requests from viewers go to the source, at most one per interval.
import { MediaStreamTrack, type RTCRtpCodecParameters, type RtpPacket } from 'werift';
import { codecName, type EngineMedia } from '../stream-media.js';
import { vp8Keyframe } from '../vp8.js';

export type Kind = 'audio' | 'video';

export interface Source {
  codec: RTCRtpCodecParameters;
  /** Asks the sender for a keyframe (an RTCP PLI to the publisher, or to the parent). */
  requestKeyframe(): void;
}

interface Output {
  kind: Kind;
  track: MediaStreamTrack;
  /** The codec the viewer was answered with: a source of another codec cannot feed it. */
  mimeType: string;
  /** The first packet after a change of source re-bases the viewer's sequence and timestamps. */
  rebase: boolean;
}

/** At most one keyframe request reaches the source per this many ms, however many viewers ask. */
export const KEYFRAME_INTERVAL_MS = 500;

export class StreamHub {
  private readonly sources = new Map<Kind, Source>();
  private readonly outputs = new Set<Output>();
  /** Who feeds the stream: a publisher's session id, or `pull`. */
  feeder: string | null = null;
  private lastKeyframeAsk = Number.NEGATIVE_INFINITY;
  // For the heartbeat (stream-media.ts): RTP bytes in and out and video frames in, ever; when the current feeder began; the last keyframe's size.
  private bytesIn = 0;
  private framesIn = 0;
  private bytesOut = 0;
  private fedSince: number | null = null;
  private size: { width: number; height: number } | null = null;

  constructor(
    readonly name: string,
    private readonly now: () => number = () => performance.now(),
    private readonly wallClock: () => number = Date.now,
  ) {}

  /** Whether something feeds the stream. */
  get fed(): boolean {
    return this.feeder !== null;
  }

  get outputCount(): number {
    return this.outputs.size;
  }

  /** The codec of each kind the stream carries now: what viewers are answered with. */
  codecs(): Partial<Record<Kind, RTCRtpCodecParameters>> {
    const out: Partial<Record<Kind, RTCRtpCodecParameters>> = {};
    for (const [kind, s] of this.sources) out[kind] = s.codec;
    return out;
  }

  /**
   * A new feeder and its sources (a publisher, or a pull). Answers the outputs it cannot feed (a
   * codec other than theirs): their sessions are to be ended, so that their viewers ask again.
   */
  feed(feeder: string, sources: Partial<Record<Kind, Source>>): Output[] {
    this.feeder = feeder;
    this.fedSince = this.wallClock();
    this.size = null;
    this.sources.clear();
    for (const [kind, s] of Object.entries(sources) as Array<[Kind, Source]>) this.sources.set(kind, s);
    const orphans: Output[] = [];
    for (const o of this.outputs) {
      const s = this.sources.get(o.kind);
      if (s && s.codec.mimeType.toLowerCase() !== o.mimeType) orphans.push(o);
      o.rebase = true;
    }
    this.lastKeyframeAsk = Number.NEGATIVE_INFINITY;
    if (this.outputs.size > 0) this.askKeyframe();
    return orphans;
  }

  /** The feeder left (its session ended, the pull failed): viewers stay, and wait for the next one. */
  unfeed(feeder: string): boolean {
    if (this.feeder !== feeder) return false;
    this.feeder = null;
    this.fedSince = null;
    this.sources.clear();
    return true;
  }

  /** One packet from the feeder: to every output of its kind. */
  forward(kind: Kind, rtp: RtpPacket): void {
    this.bytesIn += rtp.serializeSize;
    // A video frame's last packet carries the marker bit (RFC 7741 for VP8; RFC 3550 for video in general).
    if (kind === 'video' && rtp.header.marker) this.framesIn++;
    if (kind === 'video' && this.sources.get('video')?.codec.mimeType.toLowerCase() === 'video/vp8') this.size = vp8Keyframe(rtp.payload) ?? this.size;
    // Header extensions carry the ids the publisher negotiated, not each viewer's: left out.
    rtp.header.extension = false;
    rtp.header.extensions = [];
    let wire: Buffer | null = null;
    for (const o of this.outputs) {
      if (o.kind !== kind) continue;
      if (o.rebase) {
        o.rebase = false;
        o.track.onSourceChanged.execute({ sequenceNumber: rtp.header.sequenceNumber, timestamp: rtp.header.timestamp });
      }
      wire ??= rtp.serialize();
      o.track.writeRtp(wire);
      this.bytesOut += wire.length;
    }
  }

  /** What the heartbeat says of the stream's media while something feeds it: byte counts, since when, codecs and picture size. */
  media(): EngineMedia | undefined {
    if (this.fedSince === null) return undefined;
    const video = this.sources.get('video')?.codec;
    const audio = this.sources.get('audio')?.codec;
    return {
      bytesIn: this.bytesIn,
      bytesOut: this.bytesOut,
      ...(video ? { framesIn: this.framesIn } : {}),
      since: this.fedSince,
      ...(video ? { video: { codec: codecName(video.mimeType), ...(this.size ?? {}) } } : {}),
      ...(audio ? { audio: { codec: codecName(audio.mimeType), ...(audio.channels ? { channels: audio.channels } : {}), sampleRate: audio.clockRate } } : {}),
    };
  }

  /** A track for a viewer of `kind`, fed from now on. */
  addOutput(kind: Kind, mimeType: string): Output {
    const o: Output = { kind, track: new MediaStreamTrack({ kind }), mimeType: mimeType.toLowerCase(), rebase: false };
    this.outputs.add(o);
    return o;
  }

  removeOutput(o: Output): void {
    this.outputs.delete(o);
    o.track.stop();
  }

  /** A viewer needs a keyframe (it joined, or lost one): asked of the source, throttled. */
  askKeyframe(): boolean {
    const now = this.now();
    if (now - this.lastKeyframeAsk < KEYFRAME_INTERVAL_MS) return false;
    const video = this.sources.get('video');
    if (!video) return false;
    this.lastKeyframeAsk = now;
    video.requestKeyframe();
    return true;
  }
}

export type { Output };
