// What the rest of the service reads of the group: the supervisor's facts about each node (for
// its plan), node and stream views for the API (docs/api.md), counts, and the load per role.
// Owns nothing and changes nothing: each view is made from the other modules' state when asked.
import { pageKeys } from '../domain/paging.js';
import type { BindingRecord, Listener, PlatformData } from '../domain/records.js';
import type { NodeState, Role } from '../domain/vocabulary.js';
import type { NodeFacts } from '../policy/scaling/facts.js';
import { nodeAddress } from './addresses.js';
import { toMs, type Bindings, type LiveBinding } from './bindings.js';
import type { LiveNode, Nodes } from './nodes.js';
import type { Provisions } from './provisions.js';
import type { ServingEdges } from './serving.js';
import type { Settings } from './settings.js';
import { type StatsNode, type StreamStats, streamStats } from './stream-stats.js';

export interface NodeView {
  id: string;
  role: Role;
  region: string;
  state: NodeState;
  stateSince: number;
  address: string | null;
  parent: string | null;
  load: number;
  limit: number | null;
  streams: number;
  connections: { publisher: number; subscriber: number };
  lastHeartbeat: number | null;
  faultReason?: string;
  /** Why the node says it is not ready, while it says so. */
  problem?: string;
  platform: PlatformData;
  /** Where publishers and players connect: as the node reports, else as its role is configured. */
  listeners: { publish?: Listener; subscribe?: Listener };
}

export interface StreamView {
  nodeGroup: string;
  name: string;
  state: BindingRecord['state'];
  origin: { nodeId: string; region: string | null; serverAddress: string | null; state: NodeState | null };
  transcoder?: { nodeId: string; region: string | null; state: NodeState | null };
  renditions?: string[];
  subscribers: number;
  /** The edges that carry it (or were just handed its viewers), with the viewers each reported. */
  edges: Array<{ nodeId: string; region: string; state: NodeState; subscribers: number }>;
  boundAt: number;
  since: number;
  /** From its publisher's node (GET …/stats has the rest): bits per second received, and how long it has been up. */
  bitrate: number | null;
  uptimeSeconds: number | null;
}

/** One node's load as /as/v1/metrics exports it (nodeLoads). */
export interface NodeLoad {
  id: string;
  role: Role;
  region: string;
  state: NodeState;
  load: number;
  limit: number | null;
  publishers: number;
  subscribers: number;
  lastHeartbeat: number | null;
}

export interface GroupTally {
  nodes: Array<{ role: Role; region: string; state: NodeState; count: number }>;
  bindings: { PENDING: number; LIVE: number };
  provisions: number;
}

export interface RoleLoad {
  role: Role;
  connections: number;
  capacity: number;
}

export class Views {
  constructor(
    private readonly settings: Settings,
    private readonly nodes: Nodes,
    private readonly bindings: Bindings,
    private readonly provisions: Provisions,
    private readonly serving: ServingEdges,
  ) {}

  facts(): NodeFacts[] {
    const out: NodeFacts[] = [];
    for (const n of this.nodes.all()) {
      out.push({
        id: n.id,
        role: n.record.role,
        region: n.record.region,
        state: n.record.state,
        stateSince: n.record.stateSince,
        lastSeen: n.lastSeen ?? n.seenFloor,
        reported: n.lastSeen !== null,
        connections: (n.metrics['connections.publisher'] ?? 0) + (n.metrics['connections.subscriber'] ?? 0) + n.assigned,
        rank: n.heapKey,
        metrics: n.metrics,
        platform: n.record.platform,
        hasLiveStreams: this.bindings.hasLive(n.id),
      });
    }
    return out;
  }

  private nodeView(node: LiveNode): NodeView {
    const record = node.record;
    const roles = this.settings.group.roles;
    return {
      id: record.id,
      role: record.role,
      region: record.region,
      state: record.state,
      stateSince: record.stateSince,
      address: nodeAddress(record, this.settings.trustNodes),
      parent: record.parent ?? null,
      load: node.heapKey,
      limit: Number.isFinite(node.limit) ? node.limit : null,
      streams: node.streams.size,
      connections: { publisher: node.metrics['connections.publisher'] ?? 0, subscriber: node.metrics['connections.subscriber'] ?? 0 },
      lastHeartbeat: node.lastSeen,
      ...(record.faultReason ? { faultReason: record.faultReason } : {}),
      ...(node.problem ? { problem: node.problem } : {}),
      platform: record.platform,
      listeners: {
        ...((record.listeners?.publish ?? roles[record.role]?.publish) ? { publish: record.listeners?.publish ?? roles[record.role]?.publish } : {}),
        ...((record.listeners?.subscribe ?? roles[record.role]?.subscribe) ? { subscribe: record.listeners?.subscribe ?? roles[record.role]?.subscribe } : {}),
      },
    };
  }

  nodeViews(after: string | undefined, limit: number): NodeView[] {
    return pageKeys(this.nodes.ids(), after, limit).map((id) => this.nodeView(this.nodes.get(id)!));
  }

  counts(): GroupTally {
    const tally = new Map<string, { role: Role; region: string; state: NodeState; count: number }>();
    for (const n of this.nodes.all()) {
      const key = `${n.record.role}|${n.record.region}|${n.record.state}`;
      const t = tally.get(key);
      if (t) t.count++;
      else tally.set(key, { role: n.record.role, region: n.record.region, state: n.record.state, count: 1 });
    }
    const bindings = { PENDING: 0, LIVE: 0 };
    for (const b of this.bindings.all()) bindings[b.state]++;
    return { nodes: [...tally.values()], bindings, provisions: this.provisions.size };
  }

  /**
   * Each node's load figures for /as/v1/metrics, at most `cap` of them: past it the busiest
   * (load over limit) first, so that the series a scrape carries stay bounded however big the
   * group, and the nodes an operator must see are in them.
   */
  nodeLoads(cap: number): { nodes: NodeLoad[]; omitted: number } {
    const all: NodeLoad[] = [];
    for (const n of this.nodes.all()) {
      const r = n.record;
      all.push({
        id: r.id,
        role: r.role,
        region: r.region,
        state: r.state,
        load: n.heapKey,
        limit: Number.isFinite(n.limit) ? n.limit : null,
        publishers: n.metrics['connections.publisher'] ?? 0,
        subscribers: n.metrics['connections.subscriber'] ?? 0,
        lastHeartbeat: n.lastSeen,
      });
    }
    if (all.length <= cap) return { nodes: all, omitted: 0 };
    const share = (x: NodeLoad) => (x.limit ? x.load / x.limit : x.load);
    all.sort((a, b) => share(b) - share(a) || (a.id < b.id ? -1 : 1));
    return { nodes: all.slice(0, cap), omitted: all.length - cap };
  }

  /** Per role, the load of its in-service nodes and their capacity (the sum of their limits). */
  loadByRole(): RoleLoad[] {
    const out = new Map<Role, RoleLoad>();
    for (const n of this.nodes.all()) {
      if (n.record.state !== 'INSERVICE') continue;
      const t = out.get(n.record.role) ?? { role: n.record.role, connections: 0, capacity: 0 };
      t.connections += n.heapKey;
      t.capacity += Number.isFinite(n.limit) ? n.limit : 0;
      out.set(n.record.role, t);
    }
    return [...out.values()];
  }

  private streamView(binding: LiveBinding): StreamView {
    const origin = this.nodes.get(binding.origin);
    const transcoder = binding.transcoder ? this.nodes.get(binding.transcoder) : undefined;
    const provision = this.provisions.get(binding.stream);
    const published = (transcoder ?? origin)?.media.get(binding.stream);
    return {
      nodeGroup: this.settings.name,
      name: binding.stream,
      state: binding.state,
      origin: {
        nodeId: binding.origin,
        region: origin?.record.region ?? null,
        serverAddress: origin ? nodeAddress(origin.record, this.settings.trustNodes) : null,
        state: origin?.record.state ?? null,
      },
      ...(binding.transcoder ? { transcoder: { nodeId: binding.transcoder, region: transcoder?.record.region ?? null, state: transcoder?.record.state ?? null } } : {}),
      ...(provision ? { renditions: provision.streams.map((r) => r.name) } : {}),
      subscribers: binding.subscribers,
      edges: (this.serving.of(binding.stream) ?? []).map((n) => ({ nodeId: n.id, region: n.record.region, state: n.record.state, subscribers: n.streams.get(binding.stream) ?? 0 })),
      boundAt: toMs(binding.boundAt),
      since: toMs(binding.since),
      bitrate: published?.bitrateIn ?? null,
      uptimeSeconds: published?.uptimeMs !== undefined ? Math.floor(published.uptimeMs / 1000) : null,
    };
  }

  streams(after: string | undefined, limit: number): StreamView[] {
    return pageKeys(this.bindings.streams(), after, limit).map((s) => this.streamView(this.bindings.get(s)!));
  }

  /** The `cap` streams with the most viewers, with their publishers' bit rates: the per-stream metrics, bounded. */
  busiestStreams(cap: number): Array<{ stream: string; viewers: number; bitrate: number | null }> {
    const top: LiveBinding[] = [];
    for (const b of this.bindings.all()) {
      if (top.length < cap) top.push(b);
      else if (b.subscribers > top[top.length - 1]!.subscribers) top[top.length - 1] = b;
      else continue;
      top.sort((x, y) => y.subscribers - x.subscribers);
    }
    return top.map((b) => {
      const at = this.nodes.get(b.transcoder ?? b.origin);
      return { stream: b.stream, viewers: b.subscribers, bitrate: at?.media.get(b.stream)?.bitrateIn ?? null };
    });
  }

  /** A stream's (or a rendition's) statistics from its nodes' last reports; null when it is not bound. */
  streamStats(name: string): StreamStats | null {
    const stream = this.provisions.streamOf(name);
    const b = this.bindings.get(stream);
    if (!b) return null;
    const servesViewers = (n: LiveNode) => n.record.role === 'edge' || (n.record.role === 'origin' && !this.settings.group.roles.edge);
    const statsNode = (n: LiveNode, asked: string): StatsNode => {
      const report = n.media.get(asked);
      return { nodeId: n.id, role: n.record.role, region: n.record.region, report, viewers: servesViewers(n) ? (report?.subscribers ?? n.streams.get(stream) ?? 0) : 0 };
    };
    const origin = this.nodes.get(b.origin);
    const publisher = b.transcoder ? this.nodes.get(b.transcoder) : origin;
    const provision = name === stream ? this.provisions.get(stream) : undefined;
    return streamStats({
      nodeGroup: this.settings.name,
      stream,
      name,
      state: b.state,
      publisherAt: publisher ? statsNode(publisher, stream) : null,
      carriers: [...(origin ? [origin] : []), ...(this.serving.of(stream) ?? [])].map((n) => statsNode(n, name)),
      ...(provision && origin ? { renditions: provision.streams.map((r) => ({ name: r.name, report: origin.media.get(r.name) })) } : {}),
    });
  }

  /** A stream's binding as stored. */
  binding(stream: string): BindingRecord | undefined {
    const b = this.bindings.get(stream);
    return b ? this.bindings.record(b) : undefined;
  }
}

/** A group's counts as its actor answers them (for the group list, status and metrics). */
export interface GroupCounts {
  name: string;
  nodes: Array<{ role: Role; region: string; state: NodeState; count: number }>;
  bindings: { PENDING: number; LIVE: number };
  provisions: number;
  load: Array<{ role: Role; connections: number; capacity: number }>;
}
