// Per-stream statistics (docs/api.md, GET /streams/{nodeGroup}/{streamName}/stats): what the nodes
// carrying a stream last said of it, put together: the publisher's bit rate, codecs and
// resolution and how long it has been up, and the viewers on each node. Pure; kept in memory only
// (every heartbeat brings it afresh), so it costs nothing durable.
import type { StreamMedia } from '../schemas/heartbeat.js';
import type { Role } from '../domain/vocabulary.js';

/** One node's word on one stream, as its last heartbeat gave it. */
export interface StreamReport extends StreamMedia {
  publishing: boolean;
  subscribers: number;
}

/** Only what carries something: a node with a thousand streams and no media figures keeps nothing. */
export function mediaOf(streams: ReadonlyArray<{ name: string; publishing?: boolean; subscribers?: number } & StreamMedia>): Map<string, StreamReport> {
  const out = new Map<string, StreamReport>();
  for (const s of streams) {
    out.set(s.name, {
      publishing: s.publishing ?? false,
      subscribers: s.subscribers ?? 0,
      ...(s.bitrateIn !== undefined ? { bitrateIn: s.bitrateIn } : {}),
      ...(s.bitrateOut !== undefined ? { bitrateOut: s.bitrateOut } : {}),
      ...(s.uptimeMs !== undefined ? { uptimeMs: s.uptimeMs } : {}),
      ...(s.video ? { video: s.video } : {}),
      ...(s.audio ? { audio: s.audio } : {}),
    });
  }
  return out;
}

export interface StatsNode {
  nodeId: string;
  role: Role;
  region: string;
  report: StreamReport | undefined;
  /** Viewers this node serves of the stream (edges; an origin in a group without edges). */
  viewers: number;
}

export interface StreamStats {
  nodeGroup: string;
  /** The stream as bound (a rendition's name resolves to its stream). */
  stream: string;
  /** The name asked for. */
  name: string;
  state: 'PENDING' | 'LIVE';
  /** How long its publisher has been up, as the publishing node says (null: it does not say). */
  uptimeSeconds: number | null;
  publisher: { nodeId: string; role: Role; region: string; bitrate: number | null; video: StreamMedia['video'] | null; audio: StreamMedia['audio'] | null } | null;
  viewers: number;
  nodes: Array<{ nodeId: string; role: Role; region: string; viewers: number; bitrateIn: number | null; bitrateOut: number | null }>;
  /** For a transcoded stream: each rendition as its origin receives it. */
  renditions?: Array<{ name: string; bitrate: number | null; video: StreamMedia['video'] | null }>;
}

/**
 * The stats of `name` (bound as `stream`), from the node its publisher is on (`publisherAt`: the
 * transcoder of a transcoded stream, else the origin), the nodes carrying it, and, for a
 * transcoded stream, the origin's reports of its renditions.
 */
export function streamStats(input: {
  nodeGroup: string;
  stream: string;
  name: string;
  state: 'PENDING' | 'LIVE';
  publisherAt: StatsNode | null;
  carriers: readonly StatsNode[];
  renditions?: ReadonlyArray<{ name: string; report: StreamReport | undefined }>;
}): StreamStats {
  const p = input.publisherAt;
  const r = p?.report;
  const num = (v: number | undefined) => (v === undefined ? null : v);
  return {
    nodeGroup: input.nodeGroup,
    stream: input.stream,
    name: input.name,
    state: input.state,
    uptimeSeconds: r?.uptimeMs !== undefined ? Math.floor(r.uptimeMs / 1000) : null,
    publisher: p && r?.publishing ? { nodeId: p.nodeId, role: p.role, region: p.region, bitrate: num(r.bitrateIn), video: r.video ?? null, audio: r.audio ?? null } : null,
    viewers: input.carriers.reduce((n, c) => n + c.viewers, 0),
    nodes: input.carriers.map((c) => ({ nodeId: c.nodeId, role: c.role, region: c.region, viewers: c.viewers, bitrateIn: num(c.report?.bitrateIn), bitrateOut: num(c.report?.bitrateOut) })),
    ...(input.renditions ? { renditions: input.renditions.map((x) => ({ name: x.name, bitrate: num(x.report?.bitrateIn), video: x.report?.video ?? null })) } : {}),
  };
}
