// What Janus's admin API counts of a client's PeerConnection, made into each stream's byte
// counters for the heartbeat (stream-media.ts turns them into bit rates). Pure.
//
// Janus 1.1.2 answers `handle_info` (docs/webrtc.md#janus-nodes) with, per m-line of the handle's
// PeerConnection, RTP counters since the PeerConnection began:
//   { janus: 'success', info: { webrtc: { media: { '<mid>': { stats: { in: { bytes }, out: { bytes } } } } } } }
// A handle without a PeerConnection yet has no `webrtc`. The answer is read as hostile: anything
// not of that shape counts nothing, and nothing in it can throw.

/** A handle's RTP bytes received and sent, ever (the DTLS counters beside them are left out). */
export interface HandleBytes {
  bytesIn: number;
  bytesOut: number;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A counter as Janus gives it: a non-negative integer; anything else counts nothing. */
function counter(v: unknown): number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : 0;
}

/** The bytes of `direction` of one m-line's `stats`. */
function bytesOf(stats: unknown, direction: 'in' | 'out'): number {
  if (!isObject(stats)) return 0;
  const d = stats[direction];
  return isObject(d) ? counter(d.bytes) : 0;
}

/** At most this many m-lines are summed: a PeerConnection of ours has two. */
const MAX_MEDIA = 16;

/**
 * A handle's counters from Janus's `handle_info` answer; null when the answer is not a success
 * with an `info` (an error: the handle is gone, or the secret is wrong). A handle without a
 * PeerConnection yet counts zero.
 */
export function handleBytes(answer: unknown): HandleBytes | null {
  if (!isObject(answer) || answer.janus !== 'success' || !isObject(answer.info)) return null;
  const webrtc = answer.info.webrtc;
  const media = isObject(webrtc) && isObject(webrtc.media) ? Object.values(webrtc.media).slice(0, MAX_MEDIA) : [];
  let bytesIn = 0;
  let bytesOut = 0;
  for (const m of media) {
    if (!isObject(m)) continue;
    bytesIn += bytesOf(m.stats, 'in');
    bytesOut += bytesOf(m.stats, 'out');
  }
  return { bytesIn: Math.min(bytesIn, Number.MAX_SAFE_INTEGER), bytesOut: Math.min(bytesOut, Number.MAX_SAFE_INTEGER) };
}

/** A client of the engine whose handle is read: a publisher's bytes in count for its stream, a viewer's bytes out. */
export interface CountedHandle {
  /** The engine's session id. */
  id: string;
  stream: string;
  counts: 'in' | 'out';
}

interface StreamTotals {
  bytesIn: number;
  bytesOut: number;
}

/**
 * Each stream's bytes in and out, ever, from its handles' readings: what a handle adds since its
 * previous reading counts, so that the totals only grow while viewers come and go. A reading lower
 * than the previous one (Janus began counting again) counts from zero; a handle not read this time
 * (its admin call failed) keeps its last reading and adds nothing. A stream without handles any
 * more is forgotten, and so is a handle that ended (what it counted stays in its stream's totals).
 */
export class StreamBytes {
  private readonly last = new Map<string, HandleBytes>();
  private readonly totals = new Map<string, StreamTotals>();

  /** `live`: the handles the engine has now; `readings`: what was read of them, by id. */
  update(live: readonly CountedHandle[], readings: ReadonlyMap<string, HandleBytes>): void {
    const streams = new Set<string>();
    const ids = new Set<string>();
    for (const h of live) {
      streams.add(h.stream);
      ids.add(h.id);
      const now = readings.get(h.id);
      if (!now) continue;
      let totals = this.totals.get(h.stream);
      if (!totals) this.totals.set(h.stream, (totals = { bytesIn: 0, bytesOut: 0 }));
      const was = this.last.get(h.id);
      const added = (key: keyof HandleBytes) => (was !== undefined && now[key] >= was[key] ? now[key] - was[key] : now[key]);
      if (h.counts === 'in') totals.bytesIn = Math.min(Number.MAX_SAFE_INTEGER, totals.bytesIn + added('bytesIn'));
      else totals.bytesOut = Math.min(Number.MAX_SAFE_INTEGER, totals.bytesOut + added('bytesOut'));
      this.last.set(h.id, now);
    }
    for (const id of this.last.keys()) if (!ids.has(id)) this.last.delete(id);
    for (const stream of this.totals.keys()) if (!streams.has(stream)) this.totals.delete(stream);
  }

  /** A stream's totals, once one of its handles has been read. */
  of(stream: string): StreamTotals | undefined {
    const t = this.totals.get(stream);
    return t ? { ...t } : undefined;
  }

  /** Janus restarted: nothing it counted is left. */
  clear(): void {
    this.last.clear();
    this.totals.clear();
  }
}
