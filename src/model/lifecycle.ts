// Nodes joining, changing state and leaving (docs/nodes.md): the state machine of
// src/policy/states.ts applied to a live node, and what each move means for the rest: its pool
// and its children (tree.ts), the edges that carried streams (serving.ts), the streams it
// transcoded (bindings.ts). Owns no state of its own; every move is written and told (node.state).
import type { NodeAddress, NodeRecord, PlatformData } from '../domain/records.js';
import type { NodeState, Role } from '../domain/vocabulary.js';
import { transition, type NodeEvent } from '../policy/states.js';
import type { Bindings } from './bindings.js';
import type { EffectLog } from './effects.js';
import type { LiveNode, Nodes } from './nodes.js';
import type { ServingEdges } from './serving.js';
import type { Settings } from './settings.js';
import type { ParentTree } from './tree.js';

/** A node the supervisor adds: REQUESTED for nodes the platform will create, CREATED for static ones. */
export interface NodeSpec {
  id: string;
  role: Role;
  region: string;
  platform: PlatformData;
  state?: NodeState;
}

export type NodeEventResult = { ok: true; state: NodeState | null } | { ok: false; reason: string };

export class NodeLifecycle {
  constructor(
    private readonly settings: Settings,
    private readonly nodes: Nodes,
    private readonly tree: ParentTree,
    private readonly bindings: Bindings,
    private readonly serving: ServingEdges,
    private readonly effects: EffectLog,
  ) {}

  add(spec: NodeSpec, now: number): NodeRecord {
    if (this.nodes.has(spec.id)) throw new Error(`node ${spec.id} exists`);
    const record: NodeRecord = {
      id: spec.id,
      group: this.settings.name,
      role: spec.role,
      region: spec.region,
      state: spec.state ?? 'REQUESTED',
      stateSince: now,
      createdAt: now,
      platform: spec.platform,
      parent: null,
    };
    this.nodes.insert(record, now);
    this.effects.write('node', record.id, record);
    this.effects.emit({ type: 'node.state', group: this.settings.name, nodeId: record.id, role: record.role, region: record.region, from: null, to: record.state, reason: 'requested' });
    return record;
  }

  /** Applies a state-machine event; refuses what the machine refuses. */
  applyEvent(id: string, event: NodeEvent, now: number, patch?: { platform?: PlatformData; address?: NodeAddress }): NodeEventResult {
    const node = this.nodes.get(id);
    if (!node) return { ok: false, reason: `node ${id} is not in node group ${this.settings.name}` };
    const t = transition(node.record.state, event);
    if (!t.ok) return t;
    if (patch?.platform) node.record.platform = patch.platform;
    if (patch?.address) node.record.address = patch.address;
    const reason = event.type === 'fault' ? event.reason : event.type;
    if (t.state === null) this.remove(node, now, reason);
    else if (t.state !== node.record.state) this.setState(node, t.state, now, reason);
    else if (patch) this.effects.write('node', id, node.record);
    return { ok: true, state: t.state };
  }

  setState(node: LiveNode, to: NodeState, now: number, reason: string): void {
    const from = node.record.state;
    const r = node.record;
    if (to === 'FAULT' && (from === 'SOFT_SUNSET' || from === 'HARD_SUNSET')) r.faultedFrom = { state: from, since: r.stateSince };
    // A drain resumed after a fault keeps its clock: drainTimeout counts from when it began.
    r.stateSince = from === 'FAULT' && r.faultedFrom?.state === to ? r.faultedFrom.since : now;
    r.state = to;
    if (to === 'FAULT') r.faultReason = reason;
    else delete r.faultReason;
    if (to !== 'FAULT') delete r.faultedFrom;
    this.effects.write('node', node.id, node.record);
    this.effects.emit({ type: 'node.state', group: this.settings.name, nodeId: node.id, role: node.record.role, region: node.record.region, from, to, reason });
    this.tree.stateChanged(node, to, now);
  }

  private remove(node: LiveNode, now: number, reason: string): void {
    const from = node.record.state;
    this.nodes.leavePool(node);
    this.tree.remove(node, now);
    this.nodes.delete(node);
    this.serving.nodeRemoved(node);
    this.effects.write('node', node.id, null);
    this.effects.emit({ type: 'node.state', group: this.settings.name, nodeId: node.id, role: node.record.role, region: node.record.region, from, to: null, reason });
    this.bindings.nodeRemoved(node.id);
  }
}
