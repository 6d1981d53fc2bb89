// The parent tree: origin → relay → edge, as the roles' `parentRole` say (docs/nodes.md). Owns
// who hangs under whom (children by parent), the parents children can choose (per role and
// region, fewest children first) and, per region, the others nearest first (where children look
// when their own has no parent). It decides each node's root origin, and so the load pool the
// node is in (Nodes.place), and it moves children: attach, rebalance, borrowIdleEdge. Every move
// is written and told (node.parent) through the effect log.
import { SERVING } from '../policy/states.js';
import type { NodeState, Role } from '../domain/vocabulary.js';
import { IndexedMinHeap } from '../policy/selection/heap.js';
import { regionsFrom } from '../policy/selection/regions.js';
import type { EffectLog } from './effects.js';
import type { LiveNode, Nodes, ParentSlot } from './nodes.js';
import type { Settings } from './settings.js';

/** No viewers, no streams, nothing handed out since the last heartbeat: a node that can move without cutting anyone off. */
const idle = (n: LiveNode): boolean => n.assigned === 0 && (n.metrics['connections.subscriber'] ?? 0) === 0 && n.streams.size === 0 && n.pending.size === 0;

export class ParentTree {
  private readonly children = new Map<string, Set<LiveNode>>();
  /** Nodes that can take children, by role and region, fewest children first. */
  private readonly parents = new Map<Role, Map<string, IndexedMinHeap<ParentSlot>>>();
  /** For each region, the others nearest first (where children look when their own has no parent). */
  private nearest = new Map<string, string[]>();

  constructor(
    private readonly settings: Settings,
    private readonly nodes: Nodes,
    private readonly effects: EffectLog,
  ) {
    this.reconfigure();
  }

  /** After the settings changed: the regions' orders (settleAll then moves what must move). */
  reconfigure(): void {
    const { regions } = this.settings.group;
    this.nearest = new Map(regions.map((r) => [r.name, regionsFrom(regions, r.name).filter((n) => n !== r.name)]));
  }

  private childCount(id: string): number {
    return this.children.get(id)?.size ?? 0;
  }

  /** Every node placed and every in-service orphan attached, after a load or a reconfigure: parents and pools depend on each other's states. */
  settleAll(now: number, reason: string): void {
    for (const n of this.nodes.all()) this.refreshSubtree(n);
    for (const n of this.nodes.all()) if (this.needsParent(n)) this.attach(n, now, reason);
  }

  /** The origin at the top of a node's tree; '' for roots; null when the chain is broken. */
  private rootOf(node: LiveNode): string | null {
    const roles = this.settings.group.roles;
    const parentRole = roles[node.record.role]?.parentRole;
    if (!parentRole) return '';
    let current = node;
    for (let depth = 0; depth < 4; depth++) {
      const parentId = current.record.parent;
      const parent = parentId ? this.nodes.get(parentId) : undefined;
      if (!parent || !SERVING.has(parent.record.state)) return null;
      if (!roles[parent.record.role]?.parentRole) return parent.id;
      current = parent;
    }
    return null;
  }

  /** The node's load, limit and pool (under its root, while in service), and its place among the parents. */
  refresh(node: LiveNode): void {
    this.nodes.place(node, node.record.state === 'INSERVICE' ? this.rootOf(node) : null);
    this.updateSlot(node);
  }

  private refreshSubtree(node: LiveNode): void {
    this.refresh(node);
    for (const child of this.children.get(node.id) ?? []) this.refreshSubtree(child);
  }

  needsParent(node: LiveNode): boolean {
    if (!this.settings.group.roles[node.record.role]?.parentRole || node.record.state !== 'INSERVICE') return false;
    const parent = node.record.parent ? this.nodes.get(node.record.parent) : undefined;
    return !parent || !SERVING.has(parent.record.state);
  }

  /** The in-service parent with the fewest children, in the node's own region first, then the nearest. */
  private chooseParent(node: LiveNode): LiveNode | undefined {
    const parentRole = this.settings.group.roles[node.record.role]?.parentRole;
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
      this.dropSlot(node);
      return;
    }
    if (!node.slot) {
      let byRegion = this.parents.get(role);
      if (!byRegion) this.parents.set(role, (byRegion = new Map()));
      let heap = byRegion.get(node.record.region);
      if (!heap) byRegion.set(node.record.region, (heap = new IndexedMinHeap()));
      node.slot = { node, heap, heapKey: 0, heapTie: node.heapTie, heapIndex: -1 };
      node.slot.heapKey = this.childCount(node.id);
      heap.push(node.slot);
    } else {
      node.slot.heapKey = this.childCount(node.id);
      node.slot.heap.update(node.slot);
    }
  }

  private dropSlot(node: LiveNode): void {
    if (node.slot) {
      node.slot.heap.remove(node.slot);
      node.slot = null;
    }
  }

  attach(node: LiveNode, now: number, reason: string): void {
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
    this.effects.write('node', node.id, node.record);
    this.effects.emit({ type: 'node.parent', group: this.settings.name, nodeId: node.id, parent: next, reason });
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
      if (idle(child)) next = this.chooseParent(child);
      else if (parent.record.role === 'relay' && root) {
        next = [...(this.nodes.ofRole('relay') ?? [])]
          .filter((r) => r !== parent && r.record.state === 'INSERVICE' && this.rootOf(r) === root)
          .sort((a, b) => this.childCount(a.id) - this.childCount(b.id) || a.heapTie - b.heapTie)[0];
      }
      if (next) this.setParent(child, next, now, `parent ${parent.id} is draining`);
    }
  }

  private adoptOrphans(parentRole: Role, now: number): void {
    for (const [role, options] of Object.entries(this.settings.group.roles) as Array<[Role, { parentRole?: Role } | undefined]>) {
      if (options?.parentRole !== parentRole) continue;
      for (const n of this.nodes.ofRole(role) ?? []) if (this.needsParent(n)) this.attach(n, now, 'parent available');
    }
  }

  /** The tree's part of a node's move to state `to` (its record already says so): its pool, its children, and orphans it can take. */
  stateChanged(node: LiveNode, to: NodeState, now: number): void {
    this.refreshSubtree(node);
    if (!SERVING.has(to)) this.detachChildren(node, now, `parent ${node.id} is ${to}`);
    else if (to !== 'INSERVICE') this.leaveDrainingParent(node, now);
    if (to === 'INSERVICE') {
      if (this.needsParent(node)) this.attach(node, now, 'in service');
      this.adoptOrphans(node.record.role, now);
    }
  }

  /** The tree's part of a node's removal (out of its pool already): no longer a parent, its children moved or cut loose, off its own parent. */
  remove(node: LiveNode, now: number): void {
    this.dropSlot(node);
    this.detachChildren(node, now, `parent ${node.id} was removed`, true);
    if (node.record.parent) {
      this.children.get(node.record.parent)?.delete(node);
      const parent = this.nodes.get(node.record.parent);
      if (parent) this.updateSlot(parent);
    }
    this.children.delete(node.id);
  }

  /**
   * Moves idle children (no connections) to a better parent: one in their own region, or one
   * with fewer children. Nobody is cut off, and origins that came up late get their share.
   */
  rebalance(now: number): void {
    for (const [role, options] of Object.entries(this.settings.group.roles) as Array<[Role, { parentRole?: Role } | undefined]>) {
      if (!options?.parentRole) continue;
      for (const n of this.nodes.ofRole(role) ?? []) {
        if (n.record.state !== 'INSERVICE' || !idle(n) || this.childCount(n.id) > 0) continue;
        const current = n.record.parent ? this.nodes.get(n.record.parent) : undefined;
        const best = this.chooseParent(n);
        if (!best || best === current) continue;
        const sameRegionNow = current?.record.region === n.record.region;
        const better =
          current?.record.state !== 'INSERVICE' ||
          (!sameRegionNow && best.record.region === n.record.region) ||
          (best.record.region === current.record.region && this.childCount(best.id) + 1 < this.childCount(current.id));
        if (better) this.setParent(n, best, now, 'rebalanced');
      }
    }
  }

  /**
   * No edge hangs under the stream's origin (more origins than edges, say): move an idle edge
   * (no viewers, no streams) there, nearest region first, and hand it out. Nobody is cut off,
   * and the edge learns its new parent in its next heartbeat reply.
   */
  borrowIdleEdge(origin: LiveNode, regions: readonly string[], stream: string, now: number): LiveNode | undefined {
    const parentRole = this.settings.group.roles.edge?.parentRole;
    const parent = parentRole === 'origin' ? origin : parentRole === 'relay' ? this.relayUnder(origin, regions, stream, now) : undefined;
    if (!parent) return undefined;
    for (const region of regions) {
      for (const n of this.nodes.ofRole('edge') ?? []) {
        if (n.record.region !== region || n.record.state !== 'INSERVICE' || !idle(n) || n.record.parent === parent.id) continue;
        this.setParent(n, parent, now, `viewers of '${stream}' need an edge under ${origin.id}`);
        return this.nodes.pick('edge', [region], origin.id);
      }
    }
    return undefined;
  }

  /** An in-service relay under the origin, nearest first; else an idle relay moved under it. */
  private relayUnder(origin: LiveNode, regions: readonly string[], stream: string, now: number): LiveNode | undefined {
    const relays = [...(this.nodes.ofRole('relay') ?? [])].filter((r) => r.record.state === 'INSERVICE');
    const order = (r: LiveNode) => {
      const i = regions.indexOf(r.record.region);
      return i < 0 ? regions.length : i;
    };
    const under = relays.filter((r) => this.rootOf(r) === origin.id).sort((a, b) => order(a) - order(b) || this.childCount(a.id) - this.childCount(b.id));
    if (under[0]) return under[0];
    const spare = relays.filter((r) => this.childCount(r.id) === 0 && r.streams.size === 0).sort((a, b) => order(a) - order(b))[0];
    if (spare) this.setParent(spare, origin, now, `viewers of '${stream}' need a relay under ${origin.id}`);
    return spare;
  }
}
