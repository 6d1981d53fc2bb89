// What a WebRTC node's heartbeat says of each stream's media (docs/api.md, per-stream statistics;
// the same optional fields an nginx-rtmp node fills from its stat page): bit rates from the
// engine's byte counters between two heartbeats, how long the stream has been fed here, and its
// codecs. Pure apart from the readings it keeps between reports; the clock is the caller's.
import type { StreamMedia } from '../../schemas/heartbeat.js';

/** What an engine counts of one stream (engine.ts, EngineStream.media). */
export interface EngineMedia {
  /** RTP bytes received from the stream's feeder (the publisher, or the pull from the parent), ever; absent where the engine cannot count them. */
  bytesIn?: number;
  /** RTP bytes sent to the stream's viewers and the nodes pulling it, ever. */
  bytesOut?: number;
  /** When the stream's current feeder began, ms since the epoch. */
  since: number;
  video?: { codec?: string; width?: number; height?: number };
  audio?: { codec?: string; channels?: number; sampleRate?: number };
}

interface Reading {
  at: number;
  bytesIn: number;
  bytesOut: number;
}

// The heartbeat schema's bounds: a figure past them would have the whole heartbeat refused.
const MAX_BITRATE_IN = 1e11;
const MAX_BITRATE_OUT = 1e12;
const MAX_UPTIME_MS = 1e13;

/** A codec as the heartbeat names it: `video/VP8` → `VP8`, `audio/opus` → `opus`; nothing else than the schema's characters. */
export function codecName(mimeType: string): string {
  return (mimeType.split('/').at(-1) ?? '').replace(/[^A-Za-z0-9._ -]/g, '').slice(0, 32);
}

export class MediaRates {
  private readings = new Map<string, Reading>();

  /**
   * Each stream's media at `now`: a bit rate over the time since the previous report, or, at the
   * first report of a stream (or after its counters began again: a new feeder), over the time
   * since it began. Streams not given are forgotten.
   */
  report(streams: ReadonlyArray<{ name: string; media?: EngineMedia | undefined }>, now: number): Map<string, StreamMedia> {
    const out = new Map<string, StreamMedia>();
    const next = new Map<string, Reading>();
    for (const { name, media: m } of streams) {
      if (!m) continue;
      const before = this.readings.get(name);
      const counted = m.bytesIn !== undefined && m.bytesOut !== undefined;
      const fresh = counted && before !== undefined && now > before.at && m.bytesIn! >= before.bytesIn && m.bytesOut! >= before.bytesOut;
      const from = fresh ? before : { at: m.since, bytesIn: 0, bytesOut: 0 };
      const rate = (bytes: number | undefined, was: number, max: number) =>
        bytes === undefined || now <= from.at ? undefined : Math.min(max, Math.max(0, Math.round(((bytes - was) * 8000) / (now - from.at))));
      const bitrateIn = rate(m.bytesIn, from.bytesIn, MAX_BITRATE_IN);
      const bitrateOut = rate(m.bytesOut, from.bytesOut, MAX_BITRATE_OUT);
      out.set(name, {
        ...(bitrateIn !== undefined ? { bitrateIn } : {}),
        ...(bitrateOut !== undefined ? { bitrateOut } : {}),
        uptimeMs: Math.min(MAX_UPTIME_MS, Math.max(0, Math.round(now - m.since))),
        ...(m.video ? { video: m.video } : {}),
        ...(m.audio ? { audio: m.audio } : {}),
      });
      if (counted) next.set(name, { at: now, bytesIn: m.bytesIn!, bytesOut: m.bytesOut! });
    }
    this.readings = next;
    return out;
  }
}
