// One node group's state, as a plain object with no threads and no I/O: nodes with their live
// metrics, per-(role, region, root origin) load pools, the parent tree, stream bindings and
// provisions. Every call takes `now` and leaves the durable writes and events it caused in
// `drain()`, for the actor to commit and publish. Properties test it directly.
import type { NodeGroup, RuleConfig } from '../config/types.js';
import type { EventBody } from '../domain/events.js';
import type { BindingRecord, Listener, NodeAddress, NodeRecord, PlatformData, Provision, Rendition } from '../domain/records.js';
import { unknownRegion } from '../domain/regions.js';
import { SERVING, TOLD_TO_DRAIN, transition, type NodeEvent } from '../policy/states.js';
import { LOAD_METRIC, type BindingState, type NodeState, type Role } from '../domain/vocabulary.js';
import { IndexedMinHeap, type HeapItem } from '../policy/selection/heap.js';
import type { Candidate, Selector } from '../policy/selection/selector.js';
import { hasRoom } from '../policy/selection/selector.js';
import { createSelector } from '../policy/selection/registry.js';
import { regionsFrom } from '../policy/selection/regions.js';
import { compiled, metricOf, nodeScope, ruleScope } from '../policy/expressions/scope.js';
import type { Expression } from '../policy/expressions/compile.js';
import { pageKeys } from '../domain/paging.js';
import { ExpiryBuckets } from './expiry.js';
import type { Failure } from '../domain/failure.js';
import type { Heartbeat, HeartbeatReply as HeartbeatReplyMessage, TranscodeJob } from '../schemas/heartbeat.js';
import { capabilitiesOf } from '../platforms/capabilities.js';

/** The listener answered when neither the node nor its role names one. */
const DEFAULT_LISTENER: Listener = { protocol: 'rtmp', port: 1935 };

export type Write =
  | { kind: 'node'; key: string; value: NodeRecord | null }
  | { kind: 'binding'; key: string; value: BindingRecord | null }
  | { kind: 'provision'; key: string; value: Provision | null };

export interface Effects {
  writes: Write[];
  events: EventBody[];
}

export interface Assignment {
  nodeId: string;
  role: Role;
  region: string;
  serverAddress: string;
  listener: Listener;
}

export type { Failure } from '../domain/failure.js';

export type LookupOutcome = { ok: true; node: Assignment } | Failure;

/** The heartbeat as the model applies it, and its reply: declared once, in src/schemas/heartbeat.ts. */
export type HeartbeatInput = Heartbeat;
export type HeartbeatReply = Omit<HeartbeatReplyMessage, 'token'>;

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
}

export type { NodeFacts } from '../policy/scaling/facts.js';
import type { NodeFacts } from '../policy/scaling/facts.js';

interface LiveNode extends Candidate {
  readonly id: string;
  record: NodeRecord;
  /** ms of the last heartbeat; null until the first one since this actor loaded the node. */
  lastSeen: number | null;
  /** When this actor loaded the node, so a restart gives nodes nodeTimeout to report again. */
  seenFloor: number;
  metrics: Record<string, number>;
  /** Assignments handed out since the last heartbeat: the load estimate between heartbeats. */
  assigned: number;
  /** The origin at the top of this node's tree while it is in a pool ('' for roots), else null. */
  root: string | null;
  /** The heap (pool) the node is in, if any. */
  heap: IndexedMinHeap<LiveNode> | null;
  /** Its place among the parents children can choose (keyed by its child count), when it can take children. */
  slot: ParentSlot | null;
  /** The node's rule, and how to rank it: straight from one metric, or through an expression. */
  rule: RuleConfig | undefined;
  rankMetric: string | null;
  rank: Expression<number> | null;
  /** Subscribers per stream, as the node last reported them. */
  streams: Map<string, number>;
  /** The problem of its last heartbeat, if it was not ready. */
  problem: string | null;
  /** Streams this edge was handed viewers of since its last heartbeat. */
  pending: Set<string>;
}

/** A node's entry in its parent pool: heapKey is its number of children. */
interface ParentSlot extends HeapItem {
  readonly node: LiveNode;
  readonly heap: IndexedMinHeap<ParentSlot>;
}

/** Seconds since 2020-01-01: binding times are small integers then, not a boxed number each. */
const EPOCH_S = 1_577_836_800;
const toS = (ms: number) => Math.floor(ms / 1000) - EPOCH_S;
const toMs = (s: number) => (s + EPOCH_S) * 1000;

/**
 * A binding as the model keeps it: one fixed shape, times in seconds (so a timeout is never early
 * and at most two seconds late), and the origin's id shared with its node. With a million
 * bindings, this is most of the actor's memory.
 */
class LiveBinding {
  constructor(
    readonly stream: string,
    public origin: string,
    public transcoder: string | null,
    public state: BindingState,
    public boundAt: number,
    public since: number,
    public lastListed: number,
    public subscribers: number,
    /** Who asked for it, while it is PENDING (the token subject the PENDING caps count against). */
    public by: string | null = null,
    /** The second it is filed under in the model's expiry buckets. */
    public dueS = -1,
  ) {}
}

const RETRY_AFTER_S = 2;

/**
 * The host clients are sent to. The addresses an operator's platform knows (the static config,
 * Terraform's output, the local loopback address) win over what a node's heartbeat says: a node
 * token alone must not be able to send a group's clients elsewhere (security audit). A group
 * whose nodes sit behind NAT sets `platform.trustNodeAddress`, and then the public address a node
 * declares comes first. A node's own private (bind) address is the last resort either way.
 */
const nodeAddress = (n: NodeRecord, trustNode: boolean): string | null =>
  (trustNode ? (n.address?.public ?? n.platform.address) : (n.platform.address ?? n.address?.public)) ?? n.address?.private ?? null;

/**
 * Where one node reaches another (an edge its parent, a transcoder its origin): inside a region
 * the private address, so that pulls stay in the network (and within security groups that only
 * open media ports there); across regions the address clients are given. Without trust in the
 * nodes' word, a private address the platform knows wins, and a platform that knows only one
 * address is believed for both.
 */
const peerAddress = (from: NodeRecord, to: NodeRecord, trustNode: boolean): string | null => {
  if (from.region !== to.region) return nodeAddress(to, trustNode);
  const platformPrivate = to.platform.type === 'terraform' ? to.platform.privateAddress : undefined;
  if (trustNode) return to.address?.private ?? platformPrivate ?? nodeAddress(to, true);
  return platformPrivate ?? to.platform.address ?? to.address?.private ?? nodeAddress(to, false);
};

export class GroupModel {
  private readonly nodes = new Map<string, LiveNode>();
  private readonly byRole = new Map<Role, Set<LiveNode>>();
  /** Load pools: role → root origin ('' for roots) → region → heap. No string keys on the lookup path. */
  private readonly pools = new Map<Role, Map<string, { regions: Map<string, IndexedMinHeap<LiveNode>>; of: (region: string) => IndexedMinHeap<LiveNode> | undefined }>>();
  private readonly children = new Map<string, Set<LiveNode>>();
  /** Nodes that can take children, by role and region, fewest children first. */
  private readonly parents = new Map<Role, Map<string, IndexedMinHeap<ParentSlot>>>();
  /** For each region, the others nearest first (where children look when their own has no parent). */
  private nearest = new Map<string, string[]>();
  private readonly bindings = new Map<string, LiveBinding>();
  /** Streams by the node they are bound to (as origin or as transcoder). */
  private readonly boundTo = new Map<string, Set<string>>();
  /** LIVE bindings per origin: scale-in takes origins with live publishers last. */
  private readonly liveAt = new Map<string, number>();
  /** Bindings by the second they could time out (PENDING: publishTimeout; LIVE: streamTimeout). */
  private readonly expiring = new ExpiryBuckets<LiveBinding>();
  /** Edges that carry a stream (reported) or were just handed its viewers, by stream: a few at most, so an array. */
  private readonly servedBy = new Map<string, LiveNode[]>();
  private readonly provisions = new Map<string, Provision>();
  /** Rendition name → the provisioned stream it belongs to. */
  private readonly renditions = new Map<string, string>();
  private rules = new Map<string, RuleConfig>();
  /** Limits of rules whose limit is an expression, as last evaluated. */
  private readonly limits = new Map<string, number>();
  private effects: Effects = { writes: [], events: [] };
  private tie = 0;
  /** PENDING bindings, in all and by who asked (the caps of config limits). */
  private pendingTotal = 0;
  private readonly pendingBy = new Map<string, number>();
  /**
   * When each (role, region) last asked for capacity, in seconds: a storm of lookups that find no
   * room asks once a second, not once per lookup (each ask is an event: a log write, a line, an
   * SSE message, a call to the supervisor), so that a 503 costs no more than a 200.
   */
  private readonly asked = new Map<string, number>();

  private selector: Selector;

  constructor(
    private config: NodeGroup,
    private readonly random: () => number = Math.random,
  ) {
    this.indexRules();
    this.selector = this.selectorFor(config);
  }

  private selectorFor(config: NodeGroup): Selector {
    return createSelector(config.selection.strategy, { random: this.random, nearEqual: config.selection.nearEqual });
  }

  get name(): string {
    return this.config.name;
  }

  /** Whether a node's heartbeat may name the addresses clients and peers use (platform.trustNodeAddress). */
  private get trustNodes(): boolean {
    return this.config.platform.trustNodeAddress;
  }

  get group(): NodeGroup {
    return this.config;
  }

  /** The writes and events since the last drain. */
  drain(): Effects {
    const out = this.effects;
    this.effects = { writes: [], events: [] };
    return out;
  }

  // ---- loading and configuration ------------------------------------------------------------

  restore(nodes: Iterable<NodeRecord>, bindings: Iterable<BindingRecord>, provisions: Iterable<Provision>, now: number): void {
    for (const record of nodes) this.insertNode(record, now);
    for (const p of provisions) this.indexProvision(p);
    for (const b of bindings) this.adoptBinding(b, now);
    // Parents and pools depend on each other's states: settle them once every node is known.
    for (const n of this.nodes.values()) this.refreshSubtree(n);
    for (const n of this.nodes.values()) if (this.needsParent(n)) this.attach(n, now, 'restored');
    this.drain();
  }

  /** Takes a stored binding in (at start, or when the actor loads one it had not yet). */
  adoptBinding(b: BindingRecord, now: number): void {
    if (this.bindings.has(b.stream)) return;
    const origin = this.nodes.get(b.origin)?.id ?? b.origin;
    const transcoder = b.transcoder ? (this.nodes.get(b.transcoder)?.id ?? b.transcoder) : null;
    this.indexBinding(new LiveBinding(b.stream, origin, transcoder, b.state, toS(b.boundAt), toS(b.since), toS(now), 0, b.state === 'PENDING' ? (b.by ?? null) : null));
  }

  hasBinding(stream: string): boolean {
    return this.bindings.has(stream);
  }

  /** The stream a name stands for: itself, or the provisioned stream of a rendition. */
  streamOf(name: string): string {
    return this.renditions.get(name) ?? name;
  }

  reconfigure(config: NodeGroup, now: number): void {
    const timeouts = ({ streamTimeout, publishTimeout }: NodeGroup['timing']) => `${streamTimeout}|${publishTimeout}`;
    const refile = timeouts(config.timing) !== timeouts(this.config.timing);
    this.config = config;
    // Shorter timeouts bring deadlines forward: file every binding again (the old entries go stale).
    if (refile) for (const b of this.bindings.values()) this.fileExpiry(b);
    this.indexRules();
    this.selector = this.selectorFor(config);
    this.limits.clear();
    for (const n of this.nodes.values()) this.bindRule(n);
    for (const n of this.nodes.values()) this.refreshSubtree(n);
    for (const n of this.nodes.values()) if (this.needsParent(n)) this.attach(n, now, 'reconfigured');
  }

  private indexRules(): void {
    this.rules = new Map(this.config.rules.map((r) => [`${r.region}|${r.role}`, r]));
    this.nearest = new Map(this.config.regions.map((r) => [r.name, regionsFrom(this.config.regions, r.name).filter((n) => n !== r.name)]));
  }

  rule(region: string, role: Role): RuleConfig | undefined {
    return this.rules.get(`${region}|${role}`);
  }

  // ---- nodes ----------------------------------------------------------------------------------

  /** Adds a node record: REQUESTED for nodes the platform will create, CREATED for static ones. */
  addNode(spec: { id: string; role: Role; region: string; platform: PlatformData; state?: NodeState }, now: number): NodeRecord {
    if (this.nodes.has(spec.id)) throw new Error(`node ${spec.id} exists`);
    const record: NodeRecord = {
      id: spec.id,
      group: this.config.name,
      role: spec.role,
      region: spec.region,
      state: spec.state ?? 'REQUESTED',
      stateSince: now,
      createdAt: now,
      platform: spec.platform,
      parent: null,
    };
    this.insertNode(record, now);
    this.write('node', record.id, record);
    this.emit({ type: 'node.state', group: this.name, nodeId: record.id, role: record.role, region: record.region, from: null, to: record.state, reason: 'requested' });
    return record;
  }

  hasNode(id: string): boolean {
    return this.nodes.has(id);
  }

  nodeRecord(id: string): NodeRecord | undefined {
    return this.nodes.get(id)?.record;
  }

  /** Applies a state-machine event; refuses what the machine refuses. */
  applyNodeEvent(
    id: string,
    event: NodeEvent,
    now: number,
    patch?: { platform?: PlatformData; address?: NodeAddress },
  ): { ok: true; state: NodeState | null } | { ok: false; reason: string } {
    const node = this.nodes.get(id);
    if (!node) return { ok: false, reason: `node ${id} is not in node group ${this.name}` };
    const t = transition(node.record.state, event);
    if (!t.ok) return t;
    if (patch?.platform) node.record.platform = patch.platform;
    if (patch?.address) node.record.address = patch.address;
    const reason = event.type === 'fault' ? event.reason : event.type;
    if (t.state === null) this.removeNode(node, now, reason);
    else if (t.state !== node.record.state) this.setState(node, t.state, now, reason);
    else if (patch) this.write('node', id, node.record);
    return { ok: true, state: t.state };
  }

  heartbeat(id: string, hb: HeartbeatInput, now: number): HeartbeatReply | null {
    const node = this.nodes.get(id);
    if (!node) return null;
    node.lastSeen = now;
    node.metrics = hb.metrics;
    node.assigned = 0;
    node.problem = hb.ready ? null : (hb.problem ?? null);
    const record = node.record;
    let dirty = false;
    // The node's report is its whole view of itself: a public address it no longer declares goes
    // (the platform's own record of the node's addresses is kept apart, in record.platform).
    if (hb.address && (hb.address.public !== record.address?.public || hb.address.private !== record.address?.private)) {
      record.address = hb.address;
      dirty = true;
    }
    if (hb.listeners && JSON.stringify(hb.listeners) !== JSON.stringify(record.listeners ?? {})) {
      record.listeners = hb.listeners;
      dirty = true;
    }
    const autoReinstate = this.config.timing.autoReinstate || capabilitiesOf(record.platform.type).alwaysReinstates;
    // A first heartbeat that is ready makes two moves (CREATED → STARTED → INSERVICE), each an event.
    const event = { type: 'heartbeat' as const, ready: hb.ready, autoReinstate, ...(record.faultedFrom ? { resume: record.faultedFrom.state } : {}) };
    let moved = false;
    for (let i = 0; i < 2; i++) {
      const t = transition(record.state, event);
      if (!t.ok || t.state === null || t.state === record.state) break;
      const why = record.state === 'FAULT' ? 'heartbeats resumed' : t.state === 'STARTED' && hb.ready ? 'first heartbeat' : hb.ready ? 'ready' : node.problem ? `not ready: ${node.problem}` : 'heartbeat';
      this.setState(node, t.state, now, why);
      moved = true;
    }
    if (!moved && dirty) this.write('node', id, record);
    this.observeStreams(node, hb.streams ?? [], now);
    if (this.needsParent(node)) this.attach(node, now, 'no parent');
    this.refresh(node);
    const parent = record.parent ? this.nodes.get(record.parent) : undefined;
    return {
      heartbeatMs: this.config.timing.heartbeatMs,
      parent: parent ? { nodeId: parent.id, address: peerAddress(record, parent.record, this.trustNodes) ?? '', ...(parent.record.listeners?.subscribe ?? {}) } : null,
      drain: TOLD_TO_DRAIN.has(record.state),
      ...(record.role === 'transcoder' ? { transcode: this.jobsOf(node) } : {}),
    };
  }

  private jobsOf(transcoder: LiveNode): TranscodeJob[] {
    const jobs: TranscodeJob[] = [];
    for (const stream of this.boundTo.get(transcoder.id) ?? []) {
      const b = this.bindings.get(stream);
      const origin = b ? this.nodes.get(b.origin) : undefined;
      const provision = this.provisions.get(stream);
      if (!b || b.transcoder !== transcoder.id || !origin || !provision) continue;
      const a = this.assignment(origin);
      jobs.push({ stream, origin: { nodeId: origin.id, address: peerAddress(transcoder.record, origin.record, this.trustNodes) ?? '', port: a.listener.port, protocol: a.listener.protocol }, renditions: provision.streams });
    }
    return jobs;
  }

  private insertNode(record: NodeRecord, now: number): LiveNode {
    const node: LiveNode = {
      id: record.id,
      record,
      lastSeen: null,
      seenFloor: now,
      metrics: {},
      assigned: 0,
      root: null,
      heap: null,
      slot: null,
      rule: undefined,
      rankMetric: null,
      rank: null,
      streams: new Map(),
      problem: null,
      pending: new Set(),
      heapKey: 0,
      heapTie: this.tie++,
      heapIndex: -1,
      limit: Infinity,
    };
    this.bindRule(node);
    this.nodes.set(record.id, node);
    let set = this.byRole.get(record.role);
    if (!set) this.byRole.set(record.role, (set = new Set()));
    set.add(node);
    return node;
  }

  private setState(node: LiveNode, to: NodeState, now: number, reason: string): void {
    const from = node.record.state;
    const r = node.record;
    if (to === 'FAULT' && (from === 'SOFT_SUNSET' || from === 'HARD_SUNSET')) r.faultedFrom = { state: from, since: r.stateSince };
    // A drain resumed after a fault keeps its clock: drainTimeout counts from when it began.
    r.stateSince = from === 'FAULT' && r.faultedFrom?.state === to ? r.faultedFrom.since : now;
    r.state = to;
    if (to === 'FAULT') r.faultReason = reason;
    else delete r.faultReason;
    if (to !== 'FAULT') delete r.faultedFrom;
    this.write('node', node.id, node.record);
    this.emit({ type: 'node.state', group: this.name, nodeId: node.id, role: node.record.role, region: node.record.region, from, to, reason });
    this.refreshSubtree(node);
    if (!SERVING.has(to)) this.detachChildren(node, now, `parent ${node.id} is ${to}`);
    else if (to !== 'INSERVICE') this.leaveDrainingParent(node, now);
    if (to === 'INSERVICE') {
      if (this.needsParent(node)) this.attach(node, now, 'in service');
      this.adoptOrphans(node.record.role, now);
    }
  }

  private removeNode(node: LiveNode, now: number, reason: string): void {
    const from = node.record.state;
    this.leavePool(node);
    if (node.slot) {
      node.slot.heap.remove(node.slot);
      node.slot = null;
    }
    this.detachChildren(node, now, `parent ${node.id} was removed`, true);
    if (node.record.parent) {
      this.children.get(node.record.parent)?.delete(node);
      const parent = this.nodes.get(node.record.parent);
      if (parent) this.updateSlot(parent);
    }
    this.children.delete(node.id);
    this.nodes.delete(node.id);
    this.byRole.get(node.record.role)?.delete(node);
    for (const stream of [...node.streams.keys(), ...node.pending]) this.unserve(node, stream);
    this.write('node', node.id, null);
    this.emit({ type: 'node.state', group: this.name, nodeId: node.id, role: node.record.role, region: node.record.region, from, to: null, reason });
    // A stream bound to this origin keeps its binding until its own timeouts end it (docs/choosing-nodes.md),
    // as when its origin is FAULT: viewers are told to retry (503 with Retry-After, not 404), and
    // the publisher's next lookup moves it (stream.moved). A stream this node transcoded forgets
    // its transcoder: its next transcode lookup picks another.
    for (const stream of [...(this.boundTo.get(node.id) ?? [])]) {
      const b = this.bindings.get(stream)!;
      if (b.origin !== node.id) {
        this.unindexBinding(b);
        b.transcoder = null;
        this.indexBinding(b);
        this.write('binding', b.stream, this.bindingRecord(b));
      }
    }
  }

  // ---- load pools and the parent tree -------------------------------------------------------

  /** Caches the node's rule and its rank, so that a load update is arithmetic, not a lookup. */
  private bindRule(node: LiveNode): void {
    const rule = this.rule(node.record.region, node.record.role);
    const source = rule?.rank ?? LOAD_METRIC[node.record.role];
    const rank = compiled(source, 'rank');
    node.rule = rule;
    node.rankMetric = rank.metrics.length === 1 && rank.metrics[0] === source.trim() ? source.trim() : null;
    node.rank = node.rankMetric === null ? rank : null;
  }

  private loadOf(node: LiveNode): number {
    const loadMetric = LOAD_METRIC[node.record.role];
    // Each assignment since the last heartbeat counts as one more connection of the role's kind.
    if (node.rankMetric !== null) return (metricOf(node.metrics, node.rankMetric) ?? 0) + (node.rankMetric === loadMetric ? node.assigned : 0);
    return node.rank!.evaluate(nodeScope(node.metrics, { metric: loadMetric, add: node.assigned }));
  }

  /** A rule's limit: its number, or its expression over the rule's in-service nodes (kept until the next tick). */
  private limitOf(rule: RuleConfig | undefined): number {
    if (!rule) return Infinity;
    if (typeof rule.limit === 'number') return rule.limit;
    const key = `${rule.region}|${rule.role}`;
    let limit = this.limits.get(key);
    if (limit === undefined) {
      const nodes = [...(this.byRole.get(rule.role) ?? [])].filter((n) => n.record.region === rule.region && n.record.state === 'INSERVICE');
      limit = compiled(rule.limit, 'limit').evaluate(ruleScope(nodes, 0));
      this.limits.set(key, limit);
    }
    return limit;
  }

  private poolSet(role: Role, root: string) {
    let byRoot = this.pools.get(role);
    if (!byRoot) this.pools.set(role, (byRoot = new Map()));
    let set = byRoot.get(root);
    if (!set) {
      const regions = new Map<string, IndexedMinHeap<LiveNode>>();
      byRoot.set(root, (set = { regions, of: (region: string) => regions.get(region) }));
    }
    return set;
  }

  /** The origin at the top of a node's tree; '' for roots; null when the chain is broken. */
  private rootOf(node: LiveNode): string | null {
    const parentRole = this.config.roles[node.record.role]?.parentRole;
    if (!parentRole) return '';
    let current = node;
    for (let depth = 0; depth < 4; depth++) {
      const parentId = current.record.parent;
      const parent = parentId ? this.nodes.get(parentId) : undefined;
      if (!parent || !SERVING.has(parent.record.state)) return null;
      if (!this.config.roles[parent.record.role]?.parentRole) return parent.id;
      current = parent;
    }
    return null;
  }

  private refresh(node: LiveNode): void {
    node.heapKey = this.loadOf(node);
    node.limit = this.limitOf(node.rule);
    const root = node.record.state === 'INSERVICE' ? this.rootOf(node) : null;
    if (root !== node.root || (root !== null && node.heap === null)) {
      this.leavePool(node);
      if (root !== null) {
        const regions = this.poolSet(node.record.role, root).regions;
        let heap = regions.get(node.record.region);
        if (!heap) regions.set(node.record.region, (heap = new IndexedMinHeap()));
        heap.push(node);
        node.heap = heap;
        node.root = root;
      }
    } else if (node.heap) {
      node.heap.update(node);
    }
    this.updateSlot(node);
  }

  private refreshSubtree(node: LiveNode): void {
    this.refresh(node);
    for (const child of this.children.get(node.id) ?? []) this.refreshSubtree(child);
  }

  private leavePool(node: LiveNode): void {
    if (node.heap === null) return;
    node.heap.remove(node);
    if (node.heap.size === 0 && node.root !== null) {
      const set = this.pools.get(node.record.role)?.get(node.root);
      set?.regions.delete(node.record.region);
      if (set && set.regions.size === 0) this.pools.get(node.record.role)!.delete(node.root);
    }
    node.heap = null;
    node.root = null;
  }

  private needsParent(node: LiveNode): boolean {
    if (!this.config.roles[node.record.role]?.parentRole || node.record.state !== 'INSERVICE') return false;
    const parent = node.record.parent ? this.nodes.get(node.record.parent) : undefined;
    return !parent || !SERVING.has(parent.record.state);
  }

  /** The in-service parent with the fewest children, in the node's own region first, then the nearest. */
  private chooseParent(node: LiveNode): LiveNode | undefined {
    const parentRole = this.config.roles[node.record.role]?.parentRole;
    if (!parentRole) return undefined;
    const byRegion = this.parents.get(parentRole);
    if (!byRegion) return undefined;
    const own = byRegion.get(node.record.region)?.peek();
    if (own) return own.node;
    for (const region of this.nearest.get(node.record.region) ?? []) {
      const top = byRegion.get(region)?.peek();
      if (top) return top.node;
    }
    return undefined;
  }

  /** Keeps a node's place among the parents in step with its state, root and child count. */
  private updateSlot(node: LiveNode): void {
    const role = node.record.role;
    const takesChildren = role === 'origin' || role === 'relay';
    const eligible = takesChildren && node.record.state === 'INSERVICE' && node.root !== null;
    if (!eligible) {
      if (node.slot) {
        node.slot.heap.remove(node.slot);
        node.slot = null;
      }
      return;
    }
    if (!node.slot) {
      let byRegion = this.parents.get(role);
      if (!byRegion) this.parents.set(role, (byRegion = new Map()));
      let heap = byRegion.get(node.record.region);
      if (!heap) byRegion.set(node.record.region, (heap = new IndexedMinHeap()));
      node.slot = { node, heap, heapKey: 0, heapTie: node.heapTie, heapIndex: -1 };
      node.slot.heapKey = this.children.get(node.id)?.size ?? 0;
      heap.push(node.slot);
    } else {
      node.slot.heapKey = this.children.get(node.id)?.size ?? 0;
      node.slot.heap.update(node.slot);
    }
  }

  private attach(node: LiveNode, now: number, reason: string): void {
    this.setParent(node, this.chooseParent(node) ?? null, now, reason);
  }

  private setParent(node: LiveNode, parent: LiveNode | null, now: number, reason: string): void {
    const old = node.record.parent ?? null;
    const next = parent?.id ?? null;
    if (old === next) {
      this.refreshSubtree(node);
      return;
    }
    const previous = old ? this.nodes.get(old) : undefined;
    if (old) this.children.get(old)?.delete(node);
    if (parent) {
      let set = this.children.get(parent.id);
      if (!set) this.children.set(parent.id, (set = new Set()));
      set.add(node);
      this.updateSlot(parent);
    }
    if (previous) this.updateSlot(previous);
    node.record.parent = next;
    this.write('node', node.id, node.record);
    this.emit({ type: 'node.parent', group: this.name, nodeId: node.id, parent: next, reason });
    this.refreshSubtree(node);
    // A relay that just found its root can now take the edges waiting for a parent.
    if (parent && node.record.state === 'INSERVICE') this.adoptOrphans(node.record.role, now);
  }

  /** The parent left service (or the group): in-service children find another; when it is removed, nobody points at it. */
  private detachChildren(parent: LiveNode, now: number, reason: string, removed = false): void {
    for (const child of [...(this.children.get(parent.id) ?? [])]) {
      if (child.record.state === 'INSERVICE') this.setParent(child, this.chooseParent(child) ?? null, now, reason);
      else if (removed) this.setParent(child, null, now, reason);
      else this.refreshSubtree(child);
    }
  }

  /** No viewers, no streams, nothing handed out since the last heartbeat. */
  private idle(n: LiveNode): boolean {
    return n.assigned === 0 && (n.metrics['connections.subscriber'] ?? 0) === 0 && n.streams.size === 0 && n.pending.size === 0;
  }

  /**
   * A parent drains: its idle children move to an in-service parent at once; the children of a
   * draining relay move to a sibling relay under the same origin, which carries the same streams.
   * Busy children of a draining origin stay: their viewers watch streams only it has.
   */
  private leaveDrainingParent(parent: LiveNode, now: number): void {
    const root = this.rootOf(parent);
    for (const child of [...(this.children.get(parent.id) ?? [])]) {
      if (child.record.state !== 'INSERVICE') continue;
      let next: LiveNode | undefined;
      if (this.idle(child)) next = this.chooseParent(child);
      else if (parent.record.role === 'relay' && root) {
        next = [...(this.byRole.get('relay') ?? [])]
          .filter((r) => r !== parent && r.record.state === 'INSERVICE' && this.rootOf(r) === root)
          .sort((a, b) => (this.children.get(a.id)?.size ?? 0) - (this.children.get(b.id)?.size ?? 0) || a.heapTie - b.heapTie)[0];
      }
      if (next) this.setParent(child, next, now, `parent ${parent.id} is draining`);
    }
  }

  private adoptOrphans(parentRole: Role, now: number): void {
    for (const [role, options] of Object.entries(this.config.roles) as Array<[Role, { parentRole?: Role } | undefined]>) {
      if (options?.parentRole !== parentRole) continue;
      for (const n of this.byRole.get(role) ?? []) if (this.needsParent(n)) this.attach(n, now, 'parent available');
    }
  }

  /**
   * Moves idle children (no connections) to a better parent: one in their own region, or one
   * with fewer children. Nobody is cut off, and origins that came up late get their share.
   */
  rebalance(now: number): void {
    for (const [role, options] of Object.entries(this.config.roles) as Array<[Role, { parentRole?: Role } | undefined]>) {
      if (!options?.parentRole) continue;
      for (const n of this.byRole.get(role) ?? []) {
        if (n.record.state !== 'INSERVICE' || !this.idle(n) || (this.children.get(n.id)?.size ?? 0) > 0) continue;
        const current = n.record.parent ? this.nodes.get(n.record.parent) : undefined;
        const best = this.chooseParent(n);
        if (!best || best === current) continue;
        const sameRegionNow = current?.record.region === n.record.region;
        const better =
          !current ||
          current.record.state !== 'INSERVICE' ||
          (!sameRegionNow && best.record.region === n.record.region) ||
          (best.record.region === current.record.region && (this.children.get(best.id)?.size ?? 0) + 1 < (this.children.get(current.id)?.size ?? 0));
        if (better) this.setParent(n, best, now, 'rebalanced');
      }
    }
  }

  // ---- lookups (docs/choosing-nodes.md) ----------------------------------------------------------------

  private pick(role: Role, regions: readonly string[], root: string): LiveNode | undefined {
    const set = this.pools.get(role)?.get(root);
    return set ? this.selector.pick(set.of, regions) : undefined;
  }

  /** Counts the assignment against the node at once: its load, and its place in its pool. */
  private assign(node: LiveNode, forViewers = node.record.role === 'edge'): Assignment {
    node.assigned += 1;
    node.heapKey = this.loadOf(node);
    node.heap?.update(node);
    return this.assignment(node, forViewers);
  }

  /** The node and the listener its client uses: players the subscribe one, publishers the publish one. */
  private assignment(node: LiveNode, forViewers = node.record.role === 'edge'): Assignment {
    const r = node.record;
    const configured = this.config.roles[r.role];
    // Endpoints 4 and 5 always name a listener (docs/api.md): what the node reports, else what its
    // role configures, else RTMP on 1935, where media servers listen unless told otherwise.
    const listener = (forViewers ? (r.listeners?.subscribe ?? configured?.subscribe ?? r.listeners?.publish ?? configured?.publish) : (r.listeners?.publish ?? configured?.publish)) ?? DEFAULT_LISTENER;
    return { nodeId: r.id, role: r.role, region: r.region, serverAddress: nodeAddress(r, this.trustNodes) ?? '', listener };
  }

  private noCapacity(role: Role, regions: readonly string[], what: string, now: number): Failure {
    const region = regions[0] ?? this.config.regions[0]!.name;
    const key = `${role}|${region}`;
    const second = toS(now);
    if (this.asked.get(key) !== second) {
      this.asked.set(key, second);
      this.emit({ type: 'scaling.request', group: this.name, role, region, reason: `no ${role} with room for ${what}` });
    }
    return {
      ok: false,
      status: 503,
      code: 'NO_CAPACITY',
      detail: `no ${role} in service with room in node group '${this.name}' (regions tried: ${regions.join(', ')})`,
      retryAfter: RETRY_AFTER_S,
    };
  }

  /**
   * A new binding past the group's PENDING caps: 429, never a new node (README, Security). PENDING
   * bindings are publish lookups not yet published; they clear when their streams go LIVE or
   * after publishTimeout, so a client that asks for streams it never publishes runs out of room
   * of its own, not the fleet's.
   */
  private pendingRefusal(by: string | null): Failure | null {
    const { pendingBindings, pendingPerToken } = this.config.limits;
    const retryAfter = Math.max(1, Math.min(60, Math.ceil(this.config.timing.publishTimeout / 1000 / 4)));
    if (this.pendingTotal >= pendingBindings) {
      return { ok: false, status: 429, code: 'RATE_LIMITED', detail: `node group '${this.name}' holds ${this.pendingTotal} streams looked up and not yet published (limits.pendingBindings); publish them, or retry later`, retryAfter };
    }
    if (by !== null && (this.pendingBy.get(by) ?? 0) >= pendingPerToken) {
      return { ok: false, status: 429, code: 'RATE_LIMITED', detail: `this token holds ${pendingPerToken} streams looked up and not yet published in node group '${this.name}' (limits.pendingPerToken); publish them, or retry later`, retryAfter };
    }
    return null;
  }

  publish(stream: string, regions: readonly string[], now: number, by: string | null = null): LookupOutcome {
    const existing = this.bindings.get(stream);
    const current = existing ? this.nodes.get(existing.origin) : undefined;
    if (current && current.record.state === 'INSERVICE') return { ok: true, node: this.assignment(current) };
    if (!existing) {
      const refused = this.pendingRefusal(by);
      if (refused) return refused;
    }
    const origin = this.pick('origin', regions, '');
    if (!origin) return this.noCapacity('origin', regions, `publishing '${stream}'`, now);
    this.bindTo(stream, origin, undefined, existing, now, 'origin not in service', by);
    return { ok: true, node: this.assign(origin) };
  }

  transcode(stream: string, regions: readonly string[], now: number, by: string | null = null): LookupOutcome {
    const provision = this.provisions.get(stream);
    if (!provision) {
      return { ok: false, status: 404, code: 'PROVISION_NOT_FOUND', detail: `stream '${stream}' has no provision in node group '${this.name}'` };
    }
    const existing = this.bindings.get(stream);
    const inService = (id: string | undefined) => {
      const n = id ? this.nodes.get(id) : undefined;
      return n && n.record.state === 'INSERVICE' ? n : undefined;
    };
    const keptOrigin = inService(existing?.origin);
    const keptTranscoder = inService(existing?.transcoder ?? undefined);
    if (keptOrigin && keptTranscoder) return { ok: true, node: this.assignment(keptTranscoder) };
    if (!existing) {
      const refused = this.pendingRefusal(by);
      if (refused) return refused;
    }
    const origin = keptOrigin ?? this.pick('origin', regionsFrom(this.config.regions, provision.region), '');
    if (!origin) return this.noCapacity('origin', regionsFrom(this.config.regions, provision.region), `the renditions of '${stream}'`, now);
    const transcoder = keptTranscoder ?? this.pick('transcoder', regions, '');
    if (!transcoder) return this.noCapacity('transcoder', regions, `transcoding '${stream}'`, now);
    this.bindTo(stream, origin, transcoder, existing, now, 'transcoder or origin not in service', by);
    if (!keptOrigin) this.assign(origin);
    return { ok: true, node: keptTranscoder ? this.assignment(transcoder) : this.assign(transcoder) };
  }

  subscribe(name: string, regions: readonly string[], now: number): LookupOutcome {
    const stream = this.renditions.get(name) ?? name;
    const binding = this.bindings.get(stream);
    if (!binding) {
      return { ok: false, status: 404, code: 'STREAM_NOT_FOUND', detail: `stream '${name}' is not published in node group '${this.name}'` };
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
    if (!this.config.roles.edge) {
      if (origin.record.state === 'INSERVICE') return { ok: true, node: this.assign(origin, true) };
      return { ok: false, status: 503, code: 'NO_CAPACITY', detail: `the origin of stream '${name}' is draining and takes no new viewers`, retryAfter: RETRY_AFTER_S };
    }
    const edge = this.servingEdge(stream, origin, regions) ?? this.pick('edge', regions, origin.id) ?? this.borrowIdleEdge(origin, regions, stream, now);
    if (!edge) return this.noCapacity('edge', regions, `viewers of '${name}' on origin ${origin.id}`, now);
    this.serve(edge, stream);
    return { ok: true, node: this.assign(edge) };
  }

  /**
   * An edge that already carries the stream, so that viewers share its pull from the origin
   * (docs/choosing-nodes.md: the edge that serves the stream first, then the nearest region, then the load).
   */
  private servingEdge(stream: string, origin: LiveNode, regions: readonly string[]): LiveNode | undefined {
    const serving = this.servedBy.get(stream);
    if (!serving) return undefined;
    const pool = (n: LiveNode) => n.heap !== null && n.root === origin.id;
    for (const region of regions) {
      const chosen = this.selector.choose(serving.filter((n) => n.record.region === region && pool(n) && hasRoom(n)));
      if (chosen) return chosen;
    }
    return undefined;
  }

  private serve(edge: LiveNode, stream: string): void {
    const serving = this.servedBy.get(stream);
    if (!serving) this.servedBy.set(stream, [edge]);
    else if (!serving.includes(edge)) serving.push(edge);
    else return;
    edge.pending.add(stream);
  }

  private unserve(node: LiveNode, stream: string): void {
    const serving = this.servedBy.get(stream);
    if (!serving) return;
    const i = serving.indexOf(node);
    if (i >= 0) serving.splice(i, 1);
    if (serving.length === 0) this.servedBy.delete(stream);
  }

  /**
   * No edge hangs under the stream's origin (more origins than edges, say): move an idle edge
   * (no viewers, no streams) there, nearest region first. Nobody is cut off, and the edge learns
   * its new parent in its next heartbeat reply.
   */
  private borrowIdleEdge(origin: LiveNode, regions: readonly string[], stream: string, now: number): LiveNode | undefined {
    const parentRole = this.config.roles.edge?.parentRole;
    const parent = parentRole === 'origin' ? origin : parentRole === 'relay' ? this.relayUnder(origin, regions, stream, now) : undefined;
    if (!parent) return undefined;
    for (const region of regions) {
      for (const n of this.byRole.get('edge') ?? []) {
        if (n.record.region !== region || n.record.state !== 'INSERVICE' || !this.idle(n) || n.record.parent === parent.id) continue;
        this.setParent(n, parent, now, `viewers of '${stream}' need an edge under ${origin.id}`);
        return this.pick('edge', [region], origin.id);
      }
    }
    return undefined;
  }

  /** An in-service relay under the origin, nearest first; else an idle relay moved under it. */
  private relayUnder(origin: LiveNode, regions: readonly string[], stream: string, now: number): LiveNode | undefined {
    const relays = [...(this.byRole.get('relay') ?? [])].filter((r) => r.record.state === 'INSERVICE');
    const order = (r: LiveNode) => {
      const i = regions.indexOf(r.record.region);
      return i < 0 ? regions.length : i;
    };
    const under = relays.filter((r) => this.rootOf(r) === origin.id).sort((a, b) => order(a) - order(b) || (this.children.get(a.id)?.size ?? 0) - (this.children.get(b.id)?.size ?? 0));
    if (under[0]) return under[0];
    const spare = relays.filter((r) => (this.children.get(r.id)?.size ?? 0) === 0 && r.streams.size === 0).sort((a, b) => order(a) - order(b))[0];
    if (spare) this.setParent(spare, origin, now, `viewers of '${stream}' need a relay under ${origin.id}`);
    return spare;
  }

  // ---- bindings -----------------------------------------------------------------------------

  private bindingRecord(b: LiveBinding): BindingRecord {
    return {
      stream: b.stream,
      origin: b.origin,
      ...(b.transcoder ? { transcoder: b.transcoder } : {}),
      state: b.state,
      boundAt: toMs(b.boundAt),
      since: toMs(b.since),
      ...(b.by !== null ? { by: b.by } : {}),
    };
  }

  private bindTo(stream: string, origin: LiveNode, transcoder: LiveNode | undefined, existing: LiveBinding | undefined, now: number, moveReason: string, by: string | null = null): void {
    if (existing && existing.origin !== origin.id) {
      this.emit({ type: 'stream.moved', group: this.name, stream, from: existing.origin, to: origin.id, reason: moveReason });
    }
    const nowS = toS(now);
    const b = new LiveBinding(stream, origin.id, transcoder?.id ?? null, 'PENDING', existing?.boundAt ?? nowS, nowS, nowS, existing?.subscribers ?? 0, by);
    if (existing) this.unindexBinding(existing);
    this.indexBinding(b);
    this.write('binding', stream, this.bindingRecord(b));
    if (!existing) this.emit({ type: 'stream.bound', group: this.name, stream, origin: origin.id, ...(transcoder ? { transcoder: transcoder.id } : {}) });
  }

  private indexBinding(b: LiveBinding): void {
    this.bindings.set(b.stream, b);
    if (b.state === 'LIVE') this.liveAt.set(b.origin, (this.liveAt.get(b.origin) ?? 0) + 1);
    else this.countPending(b, 1);
    this.fileExpiry(b);
    this.boundToAdd(b.origin, b.stream);
    if (b.transcoder) this.boundToAdd(b.transcoder, b.stream);
  }

  private boundToAdd(id: string, stream: string): void {
    let set = this.boundTo.get(id);
    if (!set) this.boundTo.set(id, (set = new Set()));
    set.add(stream);
  }

  /** The last second a binding is kept without news: a timeout is never early, at most a second late. */
  private expiresAt(b: LiveBinding): number {
    const { streamTimeout, publishTimeout } = this.config.timing;
    return b.state === 'LIVE' ? b.lastListed + Math.ceil(streamTimeout / 1000) : b.since + Math.ceil(publishTimeout / 1000);
  }

  private fileExpiry(b: LiveBinding): void {
    this.expiring.file(b, this.expiresAt(b) + 1);
  }

  private unindexBinding(b: LiveBinding): void {
    this.bindings.delete(b.stream);
    if (b.state === 'LIVE') {
      const live = (this.liveAt.get(b.origin) ?? 1) - 1;
      if (live > 0) this.liveAt.set(b.origin, live);
      else this.liveAt.delete(b.origin);
    } else this.countPending(b, -1);
    for (const id of b.transcoder ? [b.origin, b.transcoder] : [b.origin]) {
      const set = this.boundTo.get(id);
      set?.delete(b.stream);
      if (set?.size === 0) this.boundTo.delete(id);
    }
  }

  /** The PENDING caps' tallies, kept in step wherever a binding enters or leaves PENDING. */
  private countPending(b: LiveBinding, delta: 1 | -1): void {
    this.pendingTotal += delta;
    if (b.by === null) return;
    const n = (this.pendingBy.get(b.by) ?? 0) + delta;
    if (n > 0) this.pendingBy.set(b.by, n);
    else this.pendingBy.delete(b.by);
  }

  private unbind(b: LiveBinding, reason: string): void {
    this.unindexBinding(b);
    this.write('binding', b.stream, null);
    this.emit({ type: 'stream.unbound', group: this.name, stream: b.stream, origin: b.origin, reason });
  }

  private observeStreams(node: LiveNode, streams: NonNullable<HeartbeatInput['streams']>, now: number): void {
    const seen = new Map<string, number>();
    // Viewers are counted where they are served: on edges, or on origins in a group without
    // edges. An origin's subscribers are otherwise the edges and relays pulling from it.
    const servesViewers = node.record.role === 'edge' || (node.record.role === 'origin' && !this.config.roles.edge);
    // docs/choosing-nodes.md: a binding turns LIVE when the origin lists the stream. An agent that leaves the
    // flag out is read by its role: what an origin or a transcoder lists is being published there.
    const ingests = node.record.role === 'origin' || node.record.role === 'transcoder';
    for (const s of streams) {
      const stream = this.renditions.get(s.name) ?? s.name;
      seen.set(stream, (seen.get(stream) ?? 0) + (servesViewers ? (s.subscribers ?? 0) : 0));
      if (s.publishing ?? ingests) this.published(stream, node, now);
    }
    // Keep each binding's subscriber count as the sum over the nodes that report it.
    for (const [stream, before] of node.streams) {
      if (!seen.has(stream)) {
        const b = this.bindings.get(stream);
        if (b) b.subscribers = Math.max(0, b.subscribers - before);
      }
    }
    for (const [stream, count] of seen) {
      const b = this.bindings.get(stream);
      if (b) b.subscribers = Math.max(0, b.subscribers + count - (node.streams.get(stream) ?? 0));
    }
    if (node.record.role === 'edge') {
      // The heartbeat is the truth: streams handed out since are either in it now or gone.
      for (const stream of node.pending) if (!seen.has(stream)) this.unserve(node, stream);
      node.pending.clear();
      for (const stream of node.streams.keys()) if (!seen.has(stream)) this.unserve(node, stream);
      for (const stream of seen.keys()) {
        const serving = this.servedBy.get(stream);
        if (!serving) this.servedBy.set(stream, [node]);
        else if (!serving.includes(node)) serving.push(node);
      }
    }
    node.streams = seen;
  }

  private published(stream: string, node: LiveNode, now: number): void {
    const b = this.bindings.get(stream);
    const role = node.record.role;
    if (!b) {
      // A publisher reached an origin without asking: record where the stream really is.
      if (role !== 'origin') return;
      this.bindTo(stream, node, undefined, undefined, now, '');
      this.markLive(this.bindings.get(stream)!, now);
      return;
    }
    if (b.origin === node.id || b.transcoder === node.id) {
      b.lastListed = toS(now);
      if (b.state === 'PENDING' && (b.origin === node.id || !b.transcoder)) this.markLive(b, now);
      return;
    }
    const bound = this.nodes.get(b.origin);
    if (role === 'origin' && (!bound || !SERVING.has(bound.record.state))) {
      this.bindTo(stream, node, b.transcoder ? this.nodes.get(b.transcoder) : undefined, b, now, 'published at another origin');
      this.markLive(this.bindings.get(stream)!, now);
    }
  }

  private markLive(b: LiveBinding, now: number): void {
    if (b.state !== 'LIVE') {
      this.liveAt.set(b.origin, (this.liveAt.get(b.origin) ?? 0) + 1);
      this.countPending(b, -1);
      b.by = null;
    }
    b.state = 'LIVE';
    b.since = toS(now);
    b.lastListed = b.since;
    // Its deadline is now streamTimeout's, which can come before publishTimeout's.
    this.fileExpiry(b);
    this.write('binding', b.stream, this.bindingRecord(b));
    this.emit({ type: 'stream.live', group: this.name, stream: b.stream, origin: b.origin });
  }

  // ---- provisions ---------------------------------------------------------------------------

  private indexProvision(p: Provision): void {
    this.provisions.set(p.streamName, p);
    for (const r of p.streams) this.renditions.set(r.name, p.streamName);
  }

  private unindexProvision(p: Provision): void {
    this.provisions.delete(p.streamName);
    for (const r of p.streams) if (this.renditions.get(r.name) === p.streamName) this.renditions.delete(r.name);
  }

  getProvision(name: string): Provision | undefined {
    return this.provisions.get(name);
  }

  putProvision(input: { streamName: string; region: string; streams: Rendition[] }, mode: 'create' | 'replace', now: number): { ok: true; provision: Provision } | Failure {
    const existing = this.provisions.get(input.streamName);
    if (mode === 'create' && existing) {
      return { ok: false, status: 409, code: 'PROVISION_EXISTS', detail: `a provision for stream '${input.streamName}' exists in node group '${this.name}'` };
    }
    if (mode === 'replace' && !existing) {
      return { ok: false, status: 404, code: 'PROVISION_NOT_FOUND', detail: `stream '${input.streamName}' has no provision in node group '${this.name}'` };
    }
    const errors: Array<{ path: string; message: string }> = [];
    const badRegion = unknownRegion(this.config.regions, input.region);
    if (badRegion) errors.push({ path: 'body.region', message: badRegion });
    input.streams.forEach((r, i) => {
      const owner = this.renditions.get(r.name);
      if (owner !== undefined && owner !== input.streamName) {
        errors.push({ path: `body.streams[${i}].name`, message: `is already a rendition of stream '${owner}'` });
      } else if (r.name !== input.streamName && this.provisions.has(r.name)) {
        errors.push({ path: `body.streams[${i}].name`, message: `is a provisioned stream's name` });
      }
    });
    if (this.renditions.has(input.streamName) && this.renditions.get(input.streamName) !== input.streamName) {
      errors.push({ path: 'body.streamName', message: `is already a rendition of stream '${this.renditions.get(input.streamName)}'` });
    }
    if (errors.length > 0) {
      return { ok: false, status: 400, code: 'VALIDATION_FAILED', detail: errors.map((e) => `${e.path} ${e.message}`).join('; '), errors };
    }
    const provision: Provision = {
      streamName: input.streamName,
      region: input.region,
      streams: input.streams.map((r) => ({ ...r })),
      createdAt: existing?.createdAt ?? now,
      updatedAt: now,
    };
    if (existing) this.unindexProvision(existing);
    this.indexProvision(provision);
    this.write('provision', provision.streamName, provision);
    this.emit({ type: 'provision.changed', group: this.name, stream: provision.streamName, change: existing ? 'replaced' : 'created' });
    return { ok: true, provision };
  }

  /**
   * Deletes a provision. A live binding keeps its transcoder and origin, and the rendition names
   * keep resolving while it lasts, so that current viewers are not cut off.
   */
  deleteProvision(name: string): { ok: true } | Failure {
    const existing = this.provisions.get(name);
    if (!existing) return { ok: false, status: 404, code: 'PROVISION_NOT_FOUND', detail: `stream '${name}' has no provision in node group '${this.name}'` };
    this.provisions.delete(name);
    if (!this.bindings.has(name)) this.unindexProvision(existing);
    this.write('provision', name, null);
    this.emit({ type: 'provision.changed', group: this.name, stream: name, change: 'deleted' });
    return { ok: true };
  }

  // ---- time ---------------------------------------------------------------------------------

  /** Unbinds streams that stopped (streamTimeout) or never started (publishTimeout). */
  tick(now: number): void {
    const { streamTimeout, publishTimeout } = this.config.timing;
    const nowS = toS(now);
    for (const b of this.expiring.due(nowS)) {
      if (this.bindings.get(b.stream) !== b) continue; // unbound or bound anew since it was filed
      const expires = this.expiresAt(b);
      if (nowS <= expires) this.expiring.file(b, expires + 1);
      else if (b.state === 'LIVE') this.unbind(b, `not published for ${streamTimeout} ms`);
      else this.unbind(b, `never published within ${publishTimeout} ms`);
    }
    // Renditions of a deleted provision stop resolving once its stream has ended.
    for (const [rendition, stream] of [...this.renditions]) {
      if (!this.provisions.has(stream) && !this.bindings.has(stream)) this.renditions.delete(rendition);
    }
    this.rebalance(now);
    // Expression limits follow the nodes' metrics: evaluate them afresh once per tick.
    if (this.config.rules.some((r) => typeof r.limit === 'string')) {
      this.limits.clear();
      for (const n of this.nodes.values()) if (n.heap !== null) this.refresh(n);
    }
  }

  // ---- views --------------------------------------------------------------------------------

  facts(): NodeFacts[] {
    const out: NodeFacts[] = [];
    for (const n of this.nodes.values()) {
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
        hasLiveStreams: this.liveAt.has(n.id),
      });
    }
    return out;
  }

  nodeView(n: LiveNode): NodeView {
    const r = n.record;
    return {
      id: r.id,
      role: r.role,
      region: r.region,
      state: r.state,
      stateSince: r.stateSince,
      address: nodeAddress(r, this.trustNodes),
      parent: r.parent ?? null,
      load: n.heapKey,
      limit: Number.isFinite(n.limit) ? n.limit : null,
      streams: n.streams.size,
      connections: { publisher: n.metrics['connections.publisher'] ?? 0, subscriber: n.metrics['connections.subscriber'] ?? 0 },
      lastHeartbeat: n.lastSeen,
      ...(r.faultReason ? { faultReason: r.faultReason } : {}),
      ...(n.problem ? { problem: n.problem } : {}),
      platform: r.platform,
      listeners: {
        ...((r.listeners?.publish ?? this.config.roles[r.role]?.publish) ? { publish: r.listeners?.publish ?? this.config.roles[r.role]?.publish } : {}),
        ...((r.listeners?.subscribe ?? this.config.roles[r.role]?.subscribe) ? { subscribe: r.listeners?.subscribe ?? this.config.roles[r.role]?.subscribe } : {}),
      },
    };
  }

  nodeViews(after: string | undefined, limit: number): NodeView[] {
    return pageKeys(this.nodes.keys(), after, limit).map((id) => this.nodeView(this.nodes.get(id)!));
  }

  nodeCount(): number {
    return this.nodes.size;
  }

  counts(): { nodes: Array<{ role: Role; region: string; state: NodeState; count: number }>; bindings: { PENDING: number; LIVE: number }; provisions: number } {
    const tally = new Map<string, { role: Role; region: string; state: NodeState; count: number }>();
    for (const n of this.nodes.values()) {
      const key = `${n.record.role}|${n.record.region}|${n.record.state}`;
      const t = tally.get(key);
      if (t) t.count++;
      else tally.set(key, { role: n.record.role, region: n.record.region, state: n.record.state, count: 1 });
    }
    const bindings = { PENDING: 0, LIVE: 0 };
    for (const b of this.bindings.values()) bindings[b.state]++;
    return { nodes: [...tally.values()], bindings, provisions: this.provisions.size };
  }

  load(): { role: Role; connections: number; capacity: number }[] {
    const out = new Map<Role, { role: Role; connections: number; capacity: number }>();
    for (const n of this.nodes.values()) {
      if (n.record.state !== 'INSERVICE') continue;
      const t = out.get(n.record.role) ?? { role: n.record.role, connections: 0, capacity: 0 };
      t.connections += n.heapKey;
      t.capacity += Number.isFinite(n.limit) ? n.limit : 0;
      out.set(n.record.role, t);
    }
    return [...out.values()];
  }

  streamView(b: LiveBinding): StreamView {
    const origin = this.nodes.get(b.origin);
    const transcoder = b.transcoder ? this.nodes.get(b.transcoder) : undefined;
    const provision = this.provisions.get(b.stream);
    return {
      nodeGroup: this.name,
      name: b.stream,
      state: b.state,
      origin: {
        nodeId: b.origin,
        region: origin?.record.region ?? null,
        serverAddress: origin ? nodeAddress(origin.record, this.trustNodes) : null,
        state: origin?.record.state ?? null,
      },
      ...(b.transcoder ? { transcoder: { nodeId: b.transcoder, region: transcoder?.record.region ?? null, state: transcoder?.record.state ?? null } } : {}),
      ...(provision ? { renditions: provision.streams.map((r) => r.name) } : {}),
      subscribers: b.subscribers,
      edges: (this.servedBy.get(b.stream) ?? []).map((n) => ({ nodeId: n.id, region: n.record.region, state: n.record.state, subscribers: n.streams.get(b.stream) ?? 0 })),
      boundAt: toMs(b.boundAt),
      since: toMs(b.since),
    };
  }

  streams(after: string | undefined, limit: number): StreamView[] {
    return pageKeys(this.bindings.keys(), after, limit).map((s) => this.streamView(this.bindings.get(s)!));
  }

  binding(stream: string): BindingRecord | undefined {
    const b = this.bindings.get(stream);
    return b ? this.bindingRecord(b) : undefined;
  }

  provisionList(after: string | undefined, limit: number): Provision[] {
    return pageKeys(this.provisions.keys(), after, limit).map((s) => this.provisions.get(s)!);
  }

  // ---- effects ------------------------------------------------------------------------------

  private write(kind: Write['kind'], key: string, value: NodeRecord | BindingRecord | Provision | null): void {
    // Records are mutated in place; a structured copy pins what this write means.
    this.effects.writes.push({ kind, key, value: value === null ? null : structuredClone(value) } as Write);
  }

  private emit(event: EventBody): void {
    this.effects.events.push(event);
  }
}
