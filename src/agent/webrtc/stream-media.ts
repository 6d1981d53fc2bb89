// What a WebRTC node's heartbeat says of each stream's media (docs/api.md, per-stream statistics;
// the same optional fields an nginx-rtmp node fills from its stat page): bit rates from the
// engine's byte counters and the frame rate from its frame counter, between two heartbeats; how
// long the stream has been fed here, and its codecs. Pure apart from the readings it keeps between
// reports; the clock is the caller's.
import type { StreamMedia } from '../../schemas/heartbeat.js';

/** What an engine counts of one stream (engine.ts, EngineStream.media). */
export interface EngineMedia {
  /** RTP bytes received from the stream's feeder (the publisher, or the pull from the parent), ever; absent where the engine cannot count them. */
  bytesIn?: number;
  /** RTP bytes sent to the stream's viewers and the nodes pulling it, ever (Janus: to its WHEP viewers; its RTP forwards are not counted); absent where the engine cannot count them. */
  bytesOut?: number;
  /** Video frames received from the feeder (RTP packets that end a frame), ever; absent where the engine cannot count them. */
  framesIn?: number;
  /** When the stream's current feeder began, ms since the epoch. */
  since: number;
  video?: { codec?: string; width?: number; height?: number };
  audio?: { codec?: string; channels?: number; sampleRate?: number };
}

/** A stream's counters at a report; a counter the engine does not keep (an edge's bytes in, on Janus) is absent. */
interface Reading {
  at: number;
  bytesIn?: number;
  bytesOut?: number;
  framesIn?: number;
}

// The heartbeat schema's bounds: a figure past them would have the whole heartbeat refused.
const MAX_BITRATE_IN = 1e11;
const MAX_BITRATE_OUT = 1e12;
const MAX_UPTIME_MS = 1e13;
const MAX_FPS = 1000;

/** A codec as the heartbeat names it: `video/VP8` → `VP8`, `audio/opus` → `opus`; nothing else than the schema's characters. */
export function codecName(mimeType: string): string {
  return (mimeType.split('/').at(-1) ?? '').replace(/[^A-Za-z0-9._ -]/g, '').slice(0, 32);
}

export class MediaRates {
  private readings = new Map<string, Reading>();

  /**
   * Each stream's media at `now`: a bit rate over the time since the previous report, or, at the
   * first report of a stream (or after its counter began again: a new feeder), over the time since
   * it began. Each counter on its own: an engine may keep one and not the other. Streams not given
   * are forgotten.
   */
  report(streams: ReadonlyArray<{ name: string; media?: EngineMedia | undefined }>, now: number): Map<string, StreamMedia> {
    const out = new Map<string, StreamMedia>();
    const next = new Map<string, Reading>();
    for (const { name, media: m } of streams) {
      if (!m) continue;
      const before = this.readings.get(name);
      /** Per second, of a counter: `unit` scales it (8 bits a byte), `digits` rounds. */
      const rate = (count: number | undefined, was: number | undefined, unit: number, max: number, digits = 0) => {
        if (count === undefined) return undefined;
        const fresh = before !== undefined && was !== undefined && now > before.at && count >= was;
        const [from, base] = fresh ? [before.at, was] : [m.since, 0];
        const scale = 10 ** digits;
        return now <= from ? undefined : Math.min(max, Math.max(0, Math.round(((count - base) * unit * 1000 * scale) / (now - from)) / scale));
      };
      const bitrateIn = rate(m.bytesIn, before?.bytesIn, 8, MAX_BITRATE_IN);
      const bitrateOut = rate(m.bytesOut, before?.bytesOut, 8, MAX_BITRATE_OUT);
      const fps = m.video ? rate(m.framesIn, before?.framesIn, 1, MAX_FPS, 1) : undefined;
      out.set(name, {
        ...(bitrateIn !== undefined ? { bitrateIn } : {}),
        ...(bitrateOut !== undefined ? { bitrateOut } : {}),
        uptimeMs: Math.min(MAX_UPTIME_MS, Math.max(0, Math.round(now - m.since))),
        ...(m.video ? { video: { ...m.video, ...(fps !== undefined ? { fps } : {}) } } : {}),
        ...(m.audio ? { audio: m.audio } : {}),
      });
      const reading: Reading = { at: now };
      if (m.bytesIn !== undefined) reading.bytesIn = m.bytesIn;
      if (m.bytesOut !== undefined) reading.bytesOut = m.bytesOut;
      if (m.framesIn !== undefined) reading.framesIn = m.framesIn;
      if (Object.keys(reading).length > 1) next.set(name, reading);
    }
    this.readings = next;
    return out;
  }
}
