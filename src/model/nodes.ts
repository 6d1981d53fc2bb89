// Nodes and their load pools. Owns every live node of the group (by id, and by role), the load
// pools lookups pick from (per role, root origin and region: a min-heap by load), the rules that
// rank and limit nodes (an expression limit's value, until the next tick), and the selector.
// Which pool a node belongs in follows from its place in the parent tree: tree.ts decides its
// root origin and calls place(). A LiveNode is shared by the modules that keep its parts:
// tree.ts its parent and parent slot, lifecycle.ts its state, heartbeats.ts its metrics and
// streams, serving.ts the streams it was just handed.
import type { StreamReport } from './stream-stats.js';
import type { RuleConfig } from '../config/types.js';
import type { NodeRecord } from '../domain/records.js';
import { LOAD_METRIC, type Role } from '../domain/vocabulary.js';
import type { Expression } from '../policy/expressions/compile.js';
import { compiled, metricOf, nodeScope, ruleScope } from '../policy/expressions/scope.js';
import { IndexedMinHeap, type HeapItem } from '../policy/selection/heap.js';
import { createSelector } from '../policy/selection/registry.js';
import type { Candidate, Selector } from '../policy/selection/selector.js';
import type { Settings } from './settings.js';

export interface LiveNode extends Candidate {
  readonly id: string;
  record: NodeRecord;
  /** ms of the last heartbeat; null until the first one since this actor loaded the node. */
  lastSeen: number | null;
  /** When this actor loaded the node, so a restart gives nodes nodeTimeout to report again. */
  seenFloor: number;
  metrics: Record<string, number>;
  /** Assignments handed out since the last heartbeat: the load estimate between heartbeats. */
  assigned: number;
  /**
   * Publishers sent to this origin and not yet published there: its PENDING bindings. They count
   * as load until their stream goes LIVE (then the node's report counts it) or their binding times
   * out (publishTimeout), heartbeats or not: a heartbeat that came before they connected would
   * otherwise free their room, and a burst of new streams overfill the origin.
   */
  reserved: number;
  /** The origin at the top of this node's tree while it is in a pool ('' for roots), else null. */
  root: string | null;
  /** The heap (pool) the node is in, if any. */
  heap: IndexedMinHeap<LiveNode> | null;
  /** Its place among the parents children can choose (keyed by its child count), when it can take children (tree.ts). */
  slot: ParentSlot | null;
  /** The node's rule, and how to rank it: straight from one metric, or through an expression. */
  rule: RuleConfig | undefined;
  rankMetric: string | null;
  rank: Expression<number> | null;
  /** Subscribers per stream, as the node last reported them. */
  streams: Map<string, number>;
  /** What the node last said of each stream's media, by the name it reported (memory only: the next heartbeat brings it back). */
  media: Map<string, StreamReport>;
  /** The problem of its last heartbeat, if it was not ready. */
  problem: string | null;
  /** Streams this edge was handed viewers of since its last heartbeat. */
  pending: Set<string>;
}

/** A node's entry in its parent pool (tree.ts): heapKey is its number of children. */
export interface ParentSlot extends HeapItem {
  readonly node: LiveNode;
  readonly heap: IndexedMinHeap<ParentSlot>;
}

/** One role's pools under one root origin: by region, and the function the selector reads them through (made once, not per lookup). */
interface PoolSet {
  regions: Map<string, IndexedMinHeap<LiveNode>>;
  of: (region: string) => IndexedMinHeap<LiveNode> | undefined;
}

export class Nodes {
  private readonly byId = new Map<string, LiveNode>();
  /** PENDING bindings per origin id (reserve): kept apart from the nodes, which may load after their bindings. */
  private readonly reservedById = new Map<string, number>();
  private readonly byRole = new Map<Role, Set<LiveNode>>();
  /** Load pools: role → root origin ('' for roots) → region → heap. No string keys on the lookup path. */
  private readonly pools = new Map<Role, Map<string, PoolSet>>();
  private rules = new Map<string, RuleConfig>();
  /** Limits of rules whose limit is an expression, as last evaluated. */
  private readonly limits = new Map<string, number>();
  /** Nodes' ages: they break ties between equal loads, so that choices are stable. */
  private tie = 0;
  private selector: Selector;

  constructor(
    private readonly settings: Settings,
    private readonly random: () => number,
  ) {
    this.indexRules();
    this.selector = this.selectorFor();
  }

  private selectorFor(): Selector {
    const { selection } = this.settings.group;
    return createSelector(selection.strategy, { random: this.random, nearEqual: selection.nearEqual });
  }

  private indexRules(): void {
    this.rules = new Map(this.settings.group.rules.map((r) => [`${r.region}|${r.role}`, r]));
  }

  /** After the settings changed: rules, selector, each node's rule; expression limits are evaluated afresh. */
  reconfigure(): void {
    this.indexRules();
    this.selector = this.selectorFor();
    this.limits.clear();
    for (const n of this.byId.values()) this.bindRule(n);
  }

  get(id: string): LiveNode | undefined {
    return this.byId.get(id);
  }

  has(id: string): boolean {
    return this.byId.has(id);
  }

  get size(): number {
    return this.byId.size;
  }

  /** Every node, in the order they joined. */
  all(): IterableIterator<LiveNode> {
    return this.byId.values();
  }

  ids(): IterableIterator<string> {
    return this.byId.keys();
  }

  /** The nodes of one role. */
  ofRole(role: Role): ReadonlySet<LiveNode> | undefined {
    return this.byRole.get(role);
  }

  /** A node record joins (or is loaded): in no pool yet, until tree.ts places it. */
  insert(record: NodeRecord, now: number): LiveNode {
    const node: LiveNode = {
      id: record.id,
      record,
      lastSeen: null,
      seenFloor: now,
      metrics: {},
      assigned: 0,
      reserved: this.reservedById.get(record.id) ?? 0,
      root: null,
      heap: null,
      slot: null,
      rule: undefined,
      rankMetric: null,
      rank: null,
      streams: new Map(),
      media: new Map(),
      problem: null,
      pending: new Set(),
      heapKey: 0,
      heapTie: this.tie++,
      heapIndex: -1,
      limit: Infinity,
    };
    this.bindRule(node);
    this.byId.set(record.id, node);
    let set = this.byRole.get(record.role);
    if (!set) this.byRole.set(record.role, (set = new Set()));
    set.add(node);
    return node;
  }

  /** The node leaves the group's indexes (its pool it has left already: leavePool). */
  delete(node: LiveNode): void {
    this.byId.delete(node.id);
    this.byRole.get(node.record.role)?.delete(node);
  }

  // ---- rank and limit -----------------------------------------------------------------------

  /** Caches the node's rule and its rank, so that a load update is arithmetic, not a lookup. */
  private bindRule(node: LiveNode): void {
    const rule = this.rules.get(`${node.record.region}|${node.record.role}`);
    const source = rule?.rank ?? LOAD_METRIC[node.record.role];
    const rank = compiled(source, 'rank');
    node.rule = rule;
    node.rankMetric = rank.metrics.length === 1 && rank.metrics[0] === source.trim() ? source.trim() : null;
    node.rank = node.rankMetric === null ? rank : null;
  }

  private loadOf(node: LiveNode): number {
    const loadMetric = LOAD_METRIC[node.record.role];
    // Each assignment since the last heartbeat, and each publisher expected, counts as one more
    // connection of the role's kind.
    const add = node.assigned + node.reserved;
    if (node.rankMetric !== null) return (metricOf(node.metrics, node.rankMetric) ?? 0) + (node.rankMetric === loadMetric ? add : 0);
    return node.rank!.evaluate(nodeScope(node.metrics, { metric: loadMetric, add }));
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

  /**
   * Expression limits follow the nodes' metrics: once per tick their values are forgotten, to be
   * evaluated afresh as nodes are placed again. Whether the group has any (or nothing was done).
   */
  forgetExpressionLimits(): boolean {
    if (!this.settings.group.rules.some((r) => typeof r.limit === 'string')) return false;
    this.limits.clear();
    return true;
  }

  // ---- pools --------------------------------------------------------------------------------

  private poolSet(role: Role, root: string): PoolSet {
    let byRoot = this.pools.get(role);
    if (!byRoot) this.pools.set(role, (byRoot = new Map()));
    let set = byRoot.get(root);
    if (!set) {
      const regions = new Map<string, IndexedMinHeap<LiveNode>>();
      byRoot.set(root, (set = { regions, of: (region: string) => regions.get(region) }));
    }
    return set;
  }

  /** Sets the node's load and limit, and puts it in the pool of its role and region under `root` (null: in none). */
  place(node: LiveNode, root: string | null): void {
    node.heapKey = this.loadOf(node);
    node.limit = this.limitOf(node.rule);
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
  }

  leavePool(node: LiveNode): void {
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

  // ---- choosing -----------------------------------------------------------------------------

  /** The node of `role` under `root` to hand out, nearest region first (the selector's choice); undefined when none has room. */
  pick(role: Role, regions: readonly string[], root: string): LiveNode | undefined {
    const set = this.pools.get(role)?.get(root);
    return set ? this.selector.pick(set.of, regions) : undefined;
  }

  /** The one to hand out among a few candidates that all have room. */
  choose(candidates: readonly LiveNode[]): LiveNode | undefined {
    return this.selector.choose(candidates);
  }

  /** Counts an assignment against the node at once: its load, and its place in its pool. */
  count(node: LiveNode): void {
    node.assigned += 1;
    this.reposition(node);
  }

  /**
   * A PENDING binding on the origin `id` came (+1) or went (-1: LIVE, moved, timed out, ended),
   * the node loaded or not yet (bindings may load first): its load and its place in its pool.
   */
  reserve(id: string, delta: 1 | -1): void {
    const n = (this.reservedById.get(id) ?? 0) + delta;
    if (n > 0) this.reservedById.set(id, n);
    else this.reservedById.delete(id);
    const node = this.byId.get(id);
    if (!node) return;
    node.reserved = Math.max(0, n);
    this.reposition(node);
  }

  /** After its expected load changed: the node's load and its place in its pool. */
  private reposition(node: LiveNode): void {
    node.heapKey = this.loadOf(node);
    node.heap?.update(node);
  }
}
