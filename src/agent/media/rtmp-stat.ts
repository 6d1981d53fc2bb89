// The nginx-rtmp stat page (`rtmp_stat all`) read into what a heartbeat reports. Pure.
//
// The page lists, per stream, one <client> per connection. It has no publisher count, and its
// <nclients> counts everything, so clients are classified one by one:
//   - the local end of this node's own pull (flashver `ngx-local-relay`, marked <publishing/>) is
//     where an edge's or relay's stream comes from, not a publisher;
//   - a cluster child pulling from this node (flashver `switchyard/pull/<nodeId>`) is a real
//     subscriber connection, and also counts once per child as connections.clusterchildren;
//   - the transcoder's own ffmpeg reading the stream it transcodes is internal and not counted;
//   - any other <publishing/> client is a publisher, any other client a subscriber.
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { STREAM_NAME_RE } from '../../domain/vocabulary.js';
import type { StreamMedia } from '../../schemas/heartbeat.js';
import { PULL_FLASHVER_PREFIX } from './nginx-config.js';
import { TRANSCODER_FLASHVER } from './transcode.js';

export interface StatClient {
  address: string;
  flashver: string;
  publishing: boolean;
}

/** What the page says of a stream's media: its counters, and the publisher's metadata. */
export interface StatMedia {
  /** ms since the stream appeared on this node. */
  timeMs: number;
  bytesIn: number;
  bytesOut: number;
  /** nginx's own 10 s averages, bits per second (0 in the first seconds). */
  bwIn: number;
  bwOut: number;
  video?: { codec?: string; width?: number; height?: number; fps?: number };
  audio?: { codec?: string; channels?: number; sampleRate?: number };
}

export interface StatStream {
  name: string;
  clients: StatClient[];
  media: StatMedia;
}

export interface RtmpStat {
  /** The worker that answered: it changes when a reload has taken effect. */
  pid: number | null;
  bytesIn: number;
  bytesOut: number;
  /** Streams of the application named `scope`. */
  streams: StatStream[];
}

export class StatParseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StatParseError';
  }
}

export const LOCAL_RELAY_FLASHVER = 'ngx-local-relay';

export type ClientKind = 'relay-in' | 'internal' | 'child' | 'publisher' | 'subscriber';

export function classify(c: StatClient): ClientKind {
  if (c.flashver === LOCAL_RELAY_FLASHVER) return 'relay-in';
  if (c.flashver === TRANSCODER_FLASHVER) return 'internal';
  if (c.publishing) return 'publisher';
  if (c.flashver.startsWith(PULL_FLASHVER_PREFIX)) return 'child';
  return 'subscriber';
}

const LISTS = new Set(['server', 'application', 'stream', 'client']);
const parser = new XMLParser({
  // Names such as "007" or "1e3" are names, not numbers.
  parseTagValue: false,
  ignoreAttributes: true,
  isArray: (name) => LISTS.has(name),
});

type Node = Record<string, unknown>;
const list = (v: unknown): Node[] => (Array.isArray(v) ? (v.filter((x) => x !== null && typeof x === 'object') as Node[]) : []);
const text = (v: unknown): string => (typeof v === 'string' ? v.trim() : typeof v === 'number' ? String(v) : '');
const count = (v: unknown): number => {
  const n = Number(text(v));
  return Number.isFinite(n) && n >= 0 ? n : 0;
};

const CODEC_RE = /^[A-Za-z0-9._ -]{1,32}$/;
const codec = (v: unknown): string | undefined => (CODEC_RE.test(text(v)) ? text(v) : undefined);
const positive = (v: unknown): number | undefined => {
  const n = count(v);
  return n > 0 ? n : undefined;
};
const defined = <T extends object>(o: T): T | undefined =>
  Object.values(o).some((v) => v !== undefined) ? (Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T) : undefined;

function mediaOf(s: Node): StatMedia {
  const meta = (s.meta ?? {}) as Node;
  const v = (typeof meta.video === 'object' && meta.video !== null ? meta.video : {}) as Node;
  const a = (typeof meta.audio === 'object' && meta.audio !== null ? meta.audio : {}) as Node;
  const video = defined({ codec: codec(v.codec), width: positive(v.width), height: positive(v.height), fps: positive(v.frame_rate) });
  const audio = defined({ codec: codec(a.codec), channels: positive(a.channels), sampleRate: positive(a.sample_rate) });
  return {
    timeMs: count(s.time),
    bytesIn: count(s.bytes_in),
    bytesOut: count(s.bytes_out),
    bwIn: count(s.bw_in),
    bwOut: count(s.bw_out),
    ...(video ? { video } : {}),
    ...(audio ? { audio } : {}),
  };
}

export function parseRtmpStat(xml: string, scope: string): RtmpStat {
  const valid = XMLValidator.validate(xml);
  if (valid !== true) throw new StatParseError(`the stat page is not XML: ${valid.err.msg} (line ${valid.err.line})`);
  const doc = parser.parse(xml) as Node;
  const rtmp = doc.rtmp;
  if (rtmp === null || typeof rtmp !== 'object') throw new StatParseError('the stat page has no <rtmp> element');
  const root = rtmp as Node;
  const streams: StatStream[] = [];
  for (const server of list(root.server)) {
    for (const app of list(server.application)) {
      if (text(app.name) !== scope) continue;
      const live = app.live as Node | undefined;
      for (const s of list(live?.stream)) {
        streams.push({
          name: text(s.name),
          clients: list(s.client).map((c) => ({ address: text(c.address), flashver: text(c.flashver), publishing: 'publishing' in c })),
          media: mediaOf(s),
        });
      }
    }
  }
  const pid = Number(text(root.pid));
  return { pid: Number.isInteger(pid) && pid > 0 ? pid : null, bytesIn: count(root.bytes_in), bytesOut: count(root.bytes_out), streams };
}

export interface StreamLoad {
  name: string;
  /** A publisher of its own is connected here (not a pull from a parent). */
  publishing: boolean;
  publishers: number;
  subscribers: number;
  media?: StatMedia;
}

export interface StatSummary {
  publishers: number;
  subscribers: number;
  /** Distinct cluster children (edges, relays) pulling from this node. */
  children: string[];
  streams: StreamLoad[];
  /** Streams whose names the control plane would refuse (published here without a lookup). */
  ignored: string[];
}

export function summarize(stat: RtmpStat): StatSummary {
  const children = new Set<string>();
  const byName = new Map<string, StreamLoad>();
  const ignored: string[] = [];
  let publishers = 0;
  let subscribers = 0;
  for (const s of stat.streams) {
    if (!STREAM_NAME_RE.test(s.name)) {
      ignored.push(s.name);
      continue;
    }
    const load = byName.get(s.name) ?? { name: s.name, publishing: false, publishers: 0, subscribers: 0, media: s.media };
    byName.set(s.name, load);
    for (const c of s.clients) {
      const kind = classify(c);
      if (kind === 'publisher') {
        load.publishers++;
        load.publishing = true;
        publishers++;
      } else if (kind === 'subscriber' || kind === 'child') {
        load.subscribers++;
        subscribers++;
        if (kind === 'child') children.add(c.flashver.slice(PULL_FLASHVER_PREFIX.length));
      }
    }
  }
  return { publishers, subscribers, children: [...children].sort(), streams: [...byName.values()], ignored };
}

/**
 * Adds what an older generation of workers still carries after a reload. Those workers keep
 * their clients until they leave but no longer answer the stat page, so their last figures stand
 * until they exit: a node is never taken for idle (and retired) under viewers it still serves.
 */
export function mergeSummaries(current: StatSummary, older: StatSummary): StatSummary {
  const byName = new Map(current.streams.map((s) => [s.name, { ...s }]));
  for (const s of older.streams) {
    const cur = byName.get(s.name);
    if (!cur) byName.set(s.name, { ...s });
    else {
      cur.publishers += s.publishers;
      cur.subscribers += s.subscribers;
      cur.publishing ||= s.publishing;
    }
  }
  return {
    publishers: current.publishers + older.publishers,
    subscribers: current.subscribers + older.subscribers,
    children: [...new Set([...current.children, ...older.children])].sort(),
    streams: [...byName.values()],
    ignored: [...new Set([...current.ignored, ...older.ignored])],
  };
}

/** A stream's counters at one reading, to take a rate against at the next. */
export interface StreamReading {
  at: number;
  bytesIn: number;
  bytesOut: number;
}

/**
 * What a heartbeat says of a stream's media: bit rates from the byte counters since the previous
 * reading (nginx's own averages lag ten seconds, and read 0 at first), else those averages; the
 * publisher's metadata as the page has it.
 */
export function streamMediaOf(m: StatMedia, before: StreamReading | undefined, now: number): StreamMedia {
  const fresh = before !== undefined && now > before.at && m.bytesIn >= before.bytesIn && m.bytesOut >= before.bytesOut;
  const rate = (bytes: number, was: number, average: number) => (fresh ? Math.round(((bytes - was) * 8000) / (now - before!.at)) : average);
  return {
    bitrateIn: rate(m.bytesIn, before?.bytesIn ?? 0, m.bwIn),
    bitrateOut: rate(m.bytesOut, before?.bytesOut ?? 0, m.bwOut),
    uptimeMs: m.timeMs,
    ...(m.video ? { video: m.video } : {}),
    ...(m.audio ? { audio: m.audio } : {}),
  };
}
