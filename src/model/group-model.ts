// One node group's state, pure: no threads and no I/O; every call takes `now`. GroupModel is the
// front object the group actor (actors/group/actor.ts), the unit tests and the benches call. It
// owns the pending writes and events (effects.ts: taken with takeEffects(), for the actor to
// commit and publish) and the group's settings, and it wires the modules that own the rest:
//
//   nodes.ts       nodes by id and role, load pools, rules, the selector
//   tree.ts        the parent tree: children, parents to choose, roots, moves
//   bindings.ts    stream bindings, their expiry (expiry.ts) and PENDING caps
//   provisions.ts  provisions and rendition names
//   serving.ts     the edges that carry each stream
//   lookups.ts     publish, transcode, subscribe (the hot path)
//   heartbeats.ts  a node's report applied, and its reply
//   lifecycle.ts   nodes joining, changing state, leaving
//   views.ts       facts, node and stream views, counts
//   addresses.ts   where clients and peers reach a node
//   settings.ts    the group's config, one object shared by all
//
// Each module holds what it owns in its own maps and is handed, when built here, the modules it
// works through; none reaches into another's maps. Properties test the model directly.
import type { StreamStats } from './stream-stats.js';
import type { NodeGroup } from '../config/types.js';
import type { Failure } from '../domain/failure.js';
import type { BindingRecord, NodeAddress, NodeRecord, PlatformData, Provision, Rendition } from '../domain/records.js';
import type { NodeFacts } from '../policy/scaling/facts.js';
import type { NodeEvent } from '../policy/states.js';
import { Bindings } from './bindings.js';
import { EffectLog, type Effects } from './effects.js';
import { Heartbeats, type HeartbeatInput, type HeartbeatReply } from './heartbeats.js';
import { NodeLifecycle, type NodeEventResult, type NodeSpec } from './lifecycle.js';
import { Lookups, type LookupOutcome } from './lookups.js';
import { Nodes } from './nodes.js';
import { Provisions } from './provisions.js';
import { ServingEdges } from './serving.js';
import { Settings } from './settings.js';
import { ParentTree } from './tree.js';
import { Views, type GroupTally, type NodeLoad, type NodeView, type RoleLoad, type StreamView } from './views.js';

export class GroupModel {
  private readonly settings: Settings;
  private readonly effects = new EffectLog();
  private readonly nodes: Nodes;
  private readonly tree: ParentTree;
  private readonly bindings: Bindings;
  private readonly provisions: Provisions;
  private readonly serving = new ServingEdges();
  private readonly lookups: Lookups;
  private readonly heartbeats: Heartbeats;
  private readonly lifecycle: NodeLifecycle;
  private readonly views: Views;

  constructor(config: NodeGroup, random: () => number = Math.random) {
    const settings = (this.settings = new Settings(config));
    const effects = this.effects;
    const serving = this.serving;
    const nodes = (this.nodes = new Nodes(settings, random));
    const tree = (this.tree = new ParentTree(settings, nodes, effects));
    const bindings = (this.bindings = new Bindings(settings, nodes, effects));
    const provisions = (this.provisions = new Provisions(settings, bindings, effects));
    this.lookups = new Lookups(settings, nodes, tree, bindings, provisions, serving, effects);
    const lifecycle = (this.lifecycle = new NodeLifecycle(settings, nodes, tree, bindings, serving, effects));
    this.heartbeats = new Heartbeats(settings, nodes, tree, bindings, provisions, serving, lifecycle, effects);
    this.views = new Views(settings, nodes, bindings, provisions, serving);
  }

  get name(): string {
    return this.settings.name;
  }

  get group(): NodeGroup {
    return this.settings.group;
  }

  /** The writes and events decided since the last take, for the actor to commit and publish. */
  takeEffects(): Effects {
    return this.effects.take();
  }

  // ---- loading and configuration ------------------------------------------------------------

  /** The stored state, at start: nothing of it is written again, nor told. */
  restore(nodes: Iterable<NodeRecord>, bindings: Iterable<BindingRecord>, provisions: Iterable<Provision>, now: number): void {
    for (const record of nodes) this.nodes.insert(record, now);
    for (const p of provisions) this.provisions.index(p);
    for (const b of bindings) this.bindings.adopt(b, now);
    this.tree.settleAll(now, 'restored');
    this.effects.take();
  }

  /** Takes a stored binding in (at start, or when the actor loads one it had not yet). */
  adoptBinding(b: BindingRecord, now: number): void {
    this.bindings.adopt(b, now);
  }

  hasBinding(stream: string): boolean {
    return this.bindings.has(stream);
  }

  /** The stream a name stands for: itself, or the provisioned stream of a rendition. */
  streamOf(name: string): string {
    return this.provisions.streamOf(name);
  }

  reconfigure(config: NodeGroup, now: number): void {
    const timeouts = ({ streamTimeout, publishTimeout }: NodeGroup['timing']) => `${streamTimeout}|${publishTimeout}`;
    const refile = timeouts(config.timing) !== timeouts(this.settings.group.timing);
    this.settings.group = config;
    if (refile) this.bindings.refile();
    this.nodes.reconfigure();
    this.tree.reconfigure();
    this.tree.settleAll(now, 'reconfigured');
  }

  // ---- nodes (lifecycle.ts, heartbeats.ts) ----------------------------------------------------

  /** Adds a node record: REQUESTED for nodes the platform will create, CREATED for static ones. */
  addNode(spec: NodeSpec, now: number): NodeRecord {
    return this.lifecycle.add(spec, now);
  }

  hasNode(id: string): boolean {
    return this.nodes.has(id);
  }

  nodeRecord(id: string): NodeRecord | undefined {
    return this.nodes.get(id)?.record;
  }

  /** Applies a state-machine event; refuses what the machine refuses. */
  applyNodeEvent(id: string, event: NodeEvent, now: number, patch?: { platform?: PlatformData; address?: NodeAddress }): NodeEventResult {
    return this.lifecycle.applyEvent(id, event, now, patch);
  }

  heartbeat(id: string, hb: HeartbeatInput, now: number): HeartbeatReply | null {
    return this.heartbeats.apply(id, hb, now);
  }

  // ---- lookups (lookups.ts) -----------------------------------------------------------------

  publish(stream: string, regions: readonly string[], now: number, by: string | null = null): LookupOutcome {
    return this.lookups.publish(stream, regions, now, by);
  }

  transcode(stream: string, regions: readonly string[], now: number, by: string | null = null): LookupOutcome {
    return this.lookups.transcode(stream, regions, now, by);
  }

  subscribe(name: string, regions: readonly string[], now: number): LookupOutcome {
    return this.lookups.subscribe(name, regions, now);
  }

  // ---- provisions (provisions.ts) -----------------------------------------------------------

  getProvision(name: string): Provision | undefined {
    return this.provisions.get(name);
  }

  putProvision(input: { streamName: string; region: string; streams: Rendition[] }, mode: 'create' | 'replace', now: number): { ok: true; provision: Provision } | Failure {
    return this.provisions.put(input, mode, now);
  }

  deleteProvision(name: string): { ok: true } | Failure {
    return this.provisions.delete(name);
  }

  /** An admin ends a stream (or a rendition's stream): unbound at once, its publishers dropped at their node's next heartbeat. */
  endStream(name: string): { ok: true } | Failure {
    const stream = this.provisions.streamOf(name);
    if (this.bindings.end(stream)) return { ok: true };
    return { ok: false, status: 404, code: 'STREAM_NOT_FOUND', detail: `stream '${name}' is not bound in node group '${this.settings.name}'` };
  }

  // ---- time ---------------------------------------------------------------------------------

  /** Once a second: bindings that timed out, renditions of ended streams, rebalancing, expression limits. */
  tick(now: number): void {
    this.bindings.expire(now);
    this.provisions.forgetEnded();
    this.tree.rebalance(now);
    // Expression limits follow the nodes' metrics: evaluate them afresh once per tick.
    if (this.nodes.forgetExpressionLimits()) for (const n of this.nodes.all()) if (n.heap !== null) this.tree.refresh(n);
  }

  // ---- views (views.ts) ---------------------------------------------------------------------

  facts(): NodeFacts[] {
    return this.views.facts();
  }

  nodeViews(after: string | undefined, limit: number): NodeView[] {
    return this.views.nodeViews(after, limit);
  }

  nodeCount(): number {
    return this.nodes.size;
  }

  counts(): GroupTally {
    return this.views.counts();
  }

  /** Per-node load figures for /as/v1/metrics, at most `cap`, the busiest first. */
  nodeLoads(cap: number): { nodes: NodeLoad[]; omitted: number } {
    return this.views.nodeLoads(cap);
  }

  /** Per role, the load of its in-service nodes and their capacity. */
  loadByRole(): RoleLoad[] {
    return this.views.loadByRole();
  }

  streams(after: string | undefined, limit: number): StreamView[] {
    return this.views.streams(after, limit);
  }

  busiestStreams(cap: number): Array<{ stream: string; viewers: number; bitrate: number | null }> {
    return this.views.busiestStreams(cap);
  }

  streamStats(name: string): StreamStats | null {
    return this.views.streamStats(name);
  }

  binding(stream: string): BindingRecord | undefined {
    return this.views.binding(stream);
  }

  provisionList(after: string | undefined, limit: number): Provision[] {
    return this.provisions.list(after, limit);
  }
}
