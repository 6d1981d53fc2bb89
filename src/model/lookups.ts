// Lookups (docs/choosing-nodes.md): where a publisher publishes, where a transcoder takes a
// provisioned stream, where a viewer watches. The hot path of the product: each lookup reads a
// binding and a few nodes, picks from a load pool when it must, and counts the assignment at
// once; it allocates its answer and little else. Owns only when each (role, region) last asked
// for capacity (the ask itself waits in planner.ts for the next plan); binds through bindings.ts, picks through nodes.ts, borrows edges through tree.ts.
import type { Failure } from '../domain/failure.js';
import type { Role } from '../domain/vocabulary.js';
import { regionsFrom } from '../policy/selection/regions.js';
import { hasRoom } from '../policy/selection/selector.js';
import { SERVING } from '../policy/states.js';
import { assignmentOf, type Assignment } from './addresses.js';
import { toS, type Bindings } from './bindings.js';
import type { EffectLog } from './effects.js';
import type { Planner } from './planner.js';
import type { LiveNode, Nodes } from './nodes.js';
import type { Provisions } from './provisions.js';
import type { ServingEdges } from './serving.js';
import type { Settings } from './settings.js';
import type { ParentTree } from './tree.js';

/** What a lookup asks: where to publish, where to take a provisioned stream to transcode, where to watch. */
export type LookupKind = 'publish' | 'transcode' | 'subscribe';

export type LookupOutcome = { ok: true; node: Assignment } | Failure;

const RETRY_AFTER_S = 2;

export class Lookups {
  /**
   * When each (role, region) last asked for capacity, in seconds: a storm of lookups that find no
   * room asks once a second, not once per lookup (each ask is an event: a log write, a line, an
   * SSE message, a wake of the supervisor), so that a 503 costs no more than a 200.
   */
  private readonly asked = new Map<string, number>();

  constructor(
    private readonly settings: Settings,
    private readonly nodes: Nodes,
    private readonly tree: ParentTree,
    private readonly bindings: Bindings,
    private readonly provisions: Provisions,
    private readonly serving: ServingEdges,
    private readonly effects: EffectLog,
    private readonly planner: Planner,
  ) {}

  publish(stream: string, regions: readonly string[], now: number, by: string | null = null): LookupOutcome {
    const existing = this.bindings.get(stream);
    const current = existing ? this.nodes.get(existing.origin) : undefined;
    if (current && current.record.state === 'INSERVICE') return { ok: true, node: this.assignment(current) };
    if (!existing) {
      const refused = this.bindings.pendingRefusal(by);
      if (refused) return refused;
    }
    const origin = this.nodes.pick('origin', regions, '');
    if (!origin) return this.noCapacity('origin', regions, `publishing '${stream}'`, now);
    // The binding, PENDING, reserves its room on the origin until the stream is published (nodes.ts `reserve`).
    this.bindings.bindTo(stream, origin, undefined, existing, now, 'origin not in service', by);
    return { ok: true, node: this.assignment(origin) };
  }

  transcode(stream: string, regions: readonly string[], now: number, by: string | null = null): LookupOutcome {
    const group = this.settings.group;
    const provision = this.provisions.get(stream);
    if (!provision) {
      return { ok: false, status: 404, code: 'PROVISION_NOT_FOUND', detail: `stream '${stream}' has no provision in node group '${group.name}'` };
    }
    const existing = this.bindings.get(stream);
    const inService = (id: string | undefined) => {
      const n = id ? this.nodes.get(id) : undefined;
      return n && n.record.state === 'INSERVICE' ? n : undefined;
    };
    const boundOrigin = inService(existing?.origin);
    const boundTranscoder = inService(existing?.transcoder ?? undefined);
    if (boundOrigin && boundTranscoder) return { ok: true, node: this.assignment(boundTranscoder) };
    if (!existing) {
      const refused = this.bindings.pendingRefusal(by);
      if (refused) return refused;
    }
    const origin = boundOrigin ?? this.nodes.pick('origin', regionsFrom(group.regions, provision.region), '');
    if (!origin) return this.noCapacity('origin', regionsFrom(group.regions, provision.region), `the renditions of '${stream}'`, now);
    const transcoder = boundTranscoder ?? this.nodes.pick('transcoder', regions, '');
    if (!transcoder) return this.noCapacity('transcoder', regions, `transcoding '${stream}'`, now);
    this.bindings.bindTo(stream, origin, transcoder, existing, now, 'transcoder or origin not in service', by);
    return { ok: true, node: boundTranscoder ? this.assignment(transcoder) : this.assign(transcoder) };
  }

  subscribe(name: string, regions: readonly string[], now: number): LookupOutcome {
    const stream = this.provisions.streamOf(name);
    const binding = this.bindings.get(stream);
    if (!binding) {
      return { ok: false, status: 404, code: 'STREAM_NOT_FOUND', detail: `stream '${name}' is not published in node group '${this.settings.name}'` };
    }
    const origin = this.nodes.get(binding.origin);
    if (!origin || !SERVING.has(origin.record.state)) {
      return {
        ok: false,
        status: 503,
        code: 'NO_CAPACITY',
        detail: `the origin of stream '${name}' is not in service; its publisher will be moved to another origin`,
        retryAfter: RETRY_AFTER_S,
      };
    }
    // A group without a subscribing role serves viewers from its origins, only while in service
    // (docs/choosing-nodes.md): a draining origin takes no new viewers, or it would never empty.
    if (!this.settings.group.roles.edge) {
      if (origin.record.state === 'INSERVICE') return { ok: true, node: this.assign(origin, true) };
      return { ok: false, status: 503, code: 'NO_CAPACITY', detail: `the origin of stream '${name}' is draining and takes no new viewers`, retryAfter: RETRY_AFTER_S };
    }
    const edge = this.servingEdge(stream, origin, regions) ?? this.nodes.pick('edge', regions, origin.id) ?? this.tree.borrowIdleEdge(origin, regions, stream, now);
    if (!edge) return this.noCapacity('edge', regions, `viewers of '${name}' on origin ${origin.id}`, now);
    this.serving.serve(edge, stream);
    return { ok: true, node: this.assign(edge) };
  }

  /**
   * An edge that already carries the stream, so that viewers share its pull from the origin
   * (docs/choosing-nodes.md: the edge that serves the stream first, then the nearest region, then the load).
   */
  private servingEdge(stream: string, origin: LiveNode, regions: readonly string[]): LiveNode | undefined {
    const serving = this.serving.of(stream);
    if (!serving) return undefined;
    const pool = (n: LiveNode) => n.heap !== null && n.root === origin.id;
    for (const region of regions) {
      const chosen = this.nodes.choose(serving.filter((n) => n.record.region === region && pool(n) && hasRoom(n)));
      if (chosen) return chosen;
    }
    return undefined;
  }

  /** Counts the assignment against the node at once (its load, its place in its pool), and answers it. */
  private assign(node: LiveNode, forViewers = node.record.role === 'edge'): Assignment {
    this.nodes.count(node);
    return assignmentOf(node.record, this.settings.group, forViewers);
  }

  private assignment(node: LiveNode, forViewers = node.record.role === 'edge'): Assignment {
    return assignmentOf(node.record, this.settings.group, forViewers);
  }

  private noCapacity(role: Role, regions: readonly string[], what: string, now: number): Failure {
    const { name } = this.settings.group;
    const region = regions[0] ?? this.settings.group.regions[0]!.name;
    const key = `${role}|${region}`;
    const second = toS(now);
    if (this.asked.get(key) !== second) {
      this.asked.set(key, second);
      const reason = `no ${role} with room for ${what}`;
      this.effects.emit({ type: 'scaling.request', group: name, role, region, reason });
      this.planner.ask({ role, region, reason });
    }
    return {
      ok: false,
      status: 503,
      code: 'NO_CAPACITY',
      detail: `no ${role} in service with room in node group '${name}' (regions tried: ${regions.join(', ')})`,
      retryAfter: RETRY_AFTER_S,
    };
  }
}
