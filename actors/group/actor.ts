// Worker-thread entry of a node-group actor: the calls it answers. It owns one GroupModel, loads it
// from LMDB (loading.ts), and commits the writes each call causes before answering a call that
// acknowledges them, or that reveals what another call is still writing (the write path:
// durable.ts, commits.ts). The front end reaches it through comlink on the parent port; the
// supervisor through comlink on a port of its own; events leave on a third port.
import type { StreamStats } from '../../src/model/stream-stats.js';
import { parentPort, type MessagePort } from 'node:worker_threads';
import { getHeapStatistics } from 'node:v8';
import * as Comlink from 'comlink';
import type { NodeGroup } from '../../src/config/types.js';
import type { EventBody } from '../../src/domain/events.js';
import type { NodeAddress, PlatformData, Provision, Rendition } from '../../src/domain/records.js';
import type { NodeEvent } from '../../src/policy/states.js';
import type { NodeState, Role } from '../../src/domain/vocabulary.js';
import { openStore } from '../../src/store/store.js';
import { surviveCommitFailures } from '../../src/store/failures.js';
import { nodeEndpoint } from '../comlink.js';
import type { GroupPlan } from '../../src/policy/scaling/plan.js';
import type { Actuated } from '../../src/policy/scaling/memory.js';
import type { PlanRequest } from '../../src/model/planner.js';
import { Commits, ALREADY_DURABLE } from './commits.js';
import type { Failure } from '../../src/domain/failure.js';
import type { NodeFacts } from '../../src/policy/scaling/facts.js';
import type { HeartbeatInput, HeartbeatReply } from '../../src/model/heartbeats.js';
import type { LookupKind, LookupOutcome } from '../../src/model/lookups.js';
import type { GroupCounts, NodeLoad, NodeView, StreamView } from '../../src/model/views.js';
import { BindingLoader, loadModel } from './loading.js';
import { DurableGroup } from './durable.js';
import type { GroupLog, SnapshotStats } from '../../src/cluster/wal.js';

/** One lookup of a batch; `by`: the token subject asking (a new PENDING binding counts against its cap). */
export type LookupRequest = [kind: LookupKind, stream: string, regions: string[], by?: string | null];
/** One heartbeat of a batch: the node's id, and what it reported. */
export type HeartbeatRequest = [nodeId: string, heartbeat: HeartbeatInput];

/** Cluster mode: what a write is answered while the replicated log takes no appends. */
const LOG_REFUSING: Failure = {
  ok: false,
  status: 503,
  code: 'STORE_UNAVAILABLE',
  detail: 'the replicated log (NATS JetStream) takes no writes right now (a leader is being elected, or NATS is unreachable); nothing was changed, reads go on',
  retryAfter: 2,
};

export interface GroupInit {
  group: NodeGroup;
  dataDir: string;
  durability: 'commit' | 'flush';
  events: MessagePort;
  minFreeBytes?: number;
  /** Cluster mode: this actor's group is owned here at `epoch`; its commits go through the replicated log, snapshotted as `snapshot` says. */
  cluster?: { servers: string[]; instance: string; epoch: number; snapshot: { entries: number; intervalMs: number } };
}

export interface GroupDetail {
  name: string;
  nodes: NodeView[];
  nodeCount: number;
}

class GroupActor extends DurableGroup {
  private supervisorPort: MessagePort | null = null;
  /** The supervisor's open capacityWanted calls. */
  private capacityWaiters: Array<() => void> = [];
  /** The supervisor was told of the capacity asked for (until a plan takes it). */
  private capacityTold = false;

  /** A thread started early (actors/spare.ts): loaded; in cluster mode, with what a start there will need. */
  async warm(cluster: boolean): Promise<void> {
    if (cluster) await import('../../src/cluster/wal.js');
  }

  async init(init: GroupInit): Promise<void> {
    this.store = openStore(init.dataDir, init.durability, init.minFreeBytes);
    this.name = init.group.name;
    this.events = init.events;
    if (init.cluster) {
      // Loaded only in cluster mode: the embedded default never loads NATS.
      const { GroupLog } = await import('../../src/cluster/wal.js');
      this.log = await GroupLog.open(init.cluster.servers, init.group.name, init.cluster.instance, init.cluster.epoch, init.cluster.snapshot);
      this.log.watchConnection();
      this.log.onFenced = (err) => this.takenOver(err);
      // The local copy catches up with the log, then this actor's epoch fences out any other writer.
      await this.log.fence(this.store);
      // What the last owner's last commits said, out again before anything this one says
      // (src/cluster/republish.ts). Not awaited: awaited, reading a busy minute of the log held a
      // takeover up by ~1.4 s (bench:cluster's kill -9 after its load); the group serves meanwhile,
      // and its own events wait behind these (they follow `posted`).
      this.posted = this.republish(this.log);
    }
    this.commits = new Commits(
      this.store,
      init.group.name,
      (err) => this.failed(err),
      () => this.landed(),
      this.log ?? undefined,
    );
    this.model = loadModel(this.store, init.group);
    this.loader = new BindingLoader(this.store, this.model);
  }

  private async republish(log: GroupLog): Promise<void> {
    try {
      for (const batch of await log.eventsBeforeFence()) this.events.postMessage(batch);
    } catch (err) {
      // The group is served all the same: what could not be read is what a kill -9 of the last
      // owner may have cost the event log, as it did before events were carried in the log.
      console.warn(`node group '${this.name}': the events of the last owner's last commits could not be read again:`, (err as Error).message);
    }
  }

  /** The supervisor's own channel to this actor (a new one after either side restarts). */
  attachSupervisor(port: MessagePort): void {
    this.supervisorPort?.close();
    this.supervisorPort = port;
    // Calls of the supervisor that went away: its successor asks again.
    this.capacityWaiters = [];
    this.capacityTold = false;
    Comlink.expose(this, nodeEndpoint(port));
  }

  private tally(started: number, lookups: number, heartbeats: number): void {
    this.busy.seconds += (performance.now() - started) / 1000;
    this.busy.lookups += lookups;
    this.busy.heartbeats += heartbeats;
    this.busy.batches += 1;
  }

  /** The supervisor's events about this group: out on this actor's port, after those of earlier commits. */
  announce(events: EventBody[]): void {
    this.post(events, ALREADY_DURABLE);
  }

  // ---- front end ----------------------------------------------------------------------------

  /**
   * Many lookups at once: decided in order, their writes committed together before any answer.
   * An answer also waits for the commits in flight that wrote what it read (a binding another
   * call or a heartbeat is still writing, the provision of a transcode): a crash must not take
   * back what it told. Lookups of streams with nothing in flight wait for nothing of others'.
   */
  async lookups(batch: LookupRequest[]): Promise<LookupOutcome[]> {
    if (this.reloading) await this.settle();
    const started = performance.now();
    const now = Date.now();
    const m = this.model;
    if (this.loader.loading) this.loader.need(batch.map((b) => b[1]));
    // Cluster mode, while the log takes no appends: a lookup that would bind a stream is refused
    // before it decides anything (memory would have to be reloaded after), lookups of bound streams go on.
    const refusing = this.log?.refusing === true;
    const outcomes = batch.map(([kind, stream, regions, by = null]): LookupOutcome => {
      if (refusing && kind !== 'subscribe' && !m.hasBinding(m.streamOf(stream))) return LOG_REFUSING;
      return kind === 'publish' ? m.publish(stream, regions, now, by) : kind === 'transcode' ? m.transcode(stream, regions, now, by) : m.subscribe(stream, regions, now);
    });
    const effects = m.takeEffects();
    this.tally(started, batch.length, 0);
    this.wakeForCapacity();
    const settled = this.submit(effects);
    const own = effects.writes.length > 0 ? settled.durable : null;
    const readsInFlight = this.commits.quiet ? null : batch.map(([, name]) => this.writesInFlightFor(name));
    if (!own && !readsInFlight?.some((r) => r)) return outcomes;
    this.waiting += batch.length;
    try {
      // If the batch's own commit failed, only the lookups whose stream it wrote are refused: the
      // others only read what was there before (a bound stream), and their answers stand.
      // (A node the failed commit changed, such as an edge moved under the stream's origin, is refused too.)
      const written = own && !(await own) ? new Set(effects.writes.map((w) => (w.kind === 'node' ? `node:${w.key}` : w.key))) : null;
      const refusedHere = (i: number) => {
        if (written === null) return false;
        const o = outcomes[i]!;
        return written.has(batch[i]![1]) || written.has(m.streamOf(batch[i]![1])) || (o.ok && written.has(`node:${o.node.nodeId}`));
      };
      if (!readsInFlight) return written ? outcomes.map((o, i) => (refusedHere(i) ? this.refused() : o)) : outcomes;
      const durable = await Promise.all(readsInFlight.map((r) => r ?? ALREADY_DURABLE));
      return outcomes.map((o, i) => (durable[i] && !refusedHere(i) ? o : this.refused()));
    } finally {
      this.waiting -= batch.length;
    }
  }

  /** Heartbeat replies do not wait for their writes: they are facts the next heartbeat repeats. */
  async heartbeats(batch: HeartbeatRequest[]): Promise<Array<HeartbeatReply | null>> {
    if (this.reloading) await this.settle();
    const now = Date.now();
    const loading = this.loader.loading;
    if (loading) this.loader.need(batch.flatMap(([, hb]) => (hb.streams ?? []).map((s) => s.name)));
    const started = performance.now();
    const replies = batch.map(([nodeId, hb]) => this.model.heartbeat(nodeId, hb, now));
    // A transcoder's jobs come from bindings: until all are loaded, say nothing rather than too little.
    if (loading) for (const r of replies) if (r) delete r.transcode;
    this.tally(started, 0, batch.length);
    this.submit(this.model.takeEffects());
    return replies;
  }

  async putProvision(input: { streamName: string; region: string; streams: Rendition[] }, mode: 'create' | 'replace'): Promise<{ ok: true; provision: Provision } | Failure> {
    if (this.reloading) await this.settle();
    // A replaced ladder's renditions stop resolving: lookups of them wait for this commit too.
    const before = this.model.getProvision(input.streamName)?.streams.map((r) => r.name);
    const result = this.model.putProvision(input, mode, Date.now());
    if (!(await this.commit(this.model.takeEffects(), true, before))) return this.refused();
    return result;
  }

  async deleteProvision(name: string): Promise<{ ok: true } | Failure> {
    if (this.reloading) await this.settle();
    const before = this.model.getProvision(name)?.streams.map((r) => r.name);
    const result = this.model.deleteProvision(name);
    if (!(await this.commit(this.model.takeEffects(), true, before))) return this.refused();
    return result;
  }

  async endStream(name: string): Promise<{ ok: true } | Failure> {
    if (this.reloading) await this.settle();
    const result = this.model.endStream(name);
    if (!(await this.commit(this.model.takeEffects(), true))) return this.refused();
    return result;
  }

  /** Reads wait, as lookups do, for a write in flight of what they answer with. */
  getProvision(name: string): Promise<Provision | undefined> {
    return this.answerOnceDurable(
      () => this.model.getProvision(name),
      () => this.commits.pending(name),
    );
  }

  listProvisions(after: string | undefined, limit: number): Promise<Provision[]> {
    return this.answerOnceDurable(
      () => this.model.provisionList(after, limit),
      () => this.commits.last(),
    );
  }

  /** From the nodes' last reports: memory only, a heartbeat away from the truth, as node views are. */
  async streamStats(name: string): Promise<StreamStats | null> {
    await this.loader.done;
    return this.model.streamStats(name);
  }

  async listStreams(after: string | undefined, limit: number): Promise<StreamView[]> {
    await this.loader.done;
    return this.answerOnceDurable(
      () => this.model.streams(after, limit),
      () => this.commits.last(),
    );
  }

  // Node views and counts are live: they show the actors' memory, which can be a commit ahead of
  // the disk (a node's metrics are never on disk at all). Nothing in them is acknowledged.
  detail(after: string | undefined, limit: number): GroupDetail {
    return { name: this.model.name, nodes: this.model.nodeViews(after, limit), nodeCount: this.model.nodeCount() };
  }

  /** The busiest streams for /as/v1/metrics, bounded (GroupModel.busiestStreams). */
  busiestStreams(cap: number): Array<{ stream: string; viewers: number; bitrate: number | null }> {
    return this.model.busiestStreams(cap);
  }

  /** Per-node load figures for /as/v1/metrics, bounded (GroupModel.nodeLoads). */
  nodeLoads(cap: number): { nodes: NodeLoad[]; omitted: number } {
    return this.model.nodeLoads(cap);
  }

  hasNode(id: string): boolean {
    return this.model.hasNode(id);
  }

  async counts(): Promise<GroupCounts> {
    await this.loader.done;
    return { name: this.model.name, ...this.model.counts(), load: this.model.loadByRole() };
  }

  // ---- supervisor ---------------------------------------------------------------------------

  facts(): NodeFacts[] {
    return this.model.facts();
  }

  /**
   * The supervisor's plan for this group, made here where the facts and the planner's memory are
   * (src/model/planner.ts), after the group's tick. It waits for the events of earlier changes to
   * be out, so that what is told of the plan (a scaling decision, a blocked rule) follows them in
   * the event log: of every change, also one decided while it waited (a fault the plan would count
   * before its event was out).
   */
  async plan(request: PlanRequest): Promise<GroupPlan> {
    await this.tick(request.now);
    for (let out = this.posted; ; out = this.posted) {
      await out;
      if (this.reloading) await this.settle();
      else if (out === this.posted) break;
    }
    const planned = this.model.plan(request);
    this.capacityTold = false;
    // What the planner remembers is committed before its actions are carried out: a plan whose
    // memory could not be kept is not acted on (the next one, after a reload, decides again).
    if (!(await this.commit(this.model.takeEffects(), true))) return { actions: [], nodes: planned.nodes, destroying: [], deadline: planned.deadline };
    return planned;
  }

  /** The supervisor carried out a scaling action (it reports back, as an actuator does): its event and cooldown. */
  async actuated(action: Actuated, now: number): Promise<void> {
    if (this.reloading) await this.settle();
    this.model.actuated(action, now);
    await this.commit(this.model.takeEffects(), true);
  }

  /**
   * Settles once lookups have asked for capacity that no plan has seen: the supervisor keeps one
   * such call open per group and plans at once when it settles. The request itself stays here.
   */
  capacityWanted(): Promise<void> {
    if (this.model.capacityAsked && !this.capacityTold) {
      this.capacityTold = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.capacityWaiters.push(resolve));
  }

  /** Wakes the supervisor's open capacityWanted call, if lookups asked for capacity it was not told of. */
  private wakeForCapacity(): void {
    if (this.capacityWaiters.length === 0 || !this.model.capacityAsked || this.capacityTold) return;
    this.capacityTold = true;
    for (const wake of this.capacityWaiters.splice(0)) wake();
  }

  /** Once a supervisor tick, before its plan: bindings that timed out, rebalancing (GroupModel.tick). */
  private async tick(now: number): Promise<void> {
    if (this.reloading) await this.settle();
    this.model.tick(now);
    await this.commit(this.model.takeEffects(), false);
  }

  async addNodes(specs: Array<{ id: string; role: Role; region: string; platform: PlatformData; state?: NodeState }>, now: number): Promise<boolean> {
    if (this.reloading) await this.settle();
    for (const spec of specs) if (!this.model.hasNode(spec.id)) this.model.addNode(spec, now);
    return this.commit(this.model.takeEffects(), true);
  }

  async nodeEvent(
    id: string,
    event: NodeEvent,
    now: number,
    patch?: { platform?: PlatformData; address?: NodeAddress },
  ): Promise<{ ok: true; state: NodeState | null } | { ok: false; reason: string }> {
    if (this.reloading) await this.settle();
    const result = this.model.applyNodeEvent(id, event, now, patch);
    if (!(await this.commit(this.model.takeEffects(), true))) return { ok: false, reason: this.refusal };
    return result;
  }

  /** Many state-machine events in one call and one commit (reconciliation at start touches every node). */
  async nodeEvents(events: Array<{ id: string; event: NodeEvent }>, now: number): Promise<Array<{ ok: true; state: NodeState | null } | { ok: false; reason: string }>> {
    if (this.reloading) await this.settle();
    const results = events.map((e) => this.model.applyNodeEvent(e.id, e.event, now));
    if (!(await this.commit(this.model.takeEffects(), true))) return events.map(() => ({ ok: false as const, reason: this.refusal }));
    return results;
  }

  /** Time spent deciding batched lookups and heartbeats (not waiting for LMDB), and how many. */
  private busy = { seconds: 0, lookups: 0, heartbeats: 0, batches: 0 };

  /** The actor thread's heap and busy time, and the answers waiting for the store, for metrics and the benches. */
  stats(): { heapUsed: number; busySeconds: number; lookups: number; heartbeats: number; batches: number; waiting: number } {
    return {
      heapUsed: getHeapStatistics().used_heap_size,
      busySeconds: this.busy.seconds,
      lookups: this.busy.lookups,
      heartbeats: this.busy.heartbeats,
      batches: this.busy.batches,
      waiting: this.waiting,
    };
  }

  /** Cluster mode: how this owner's snapshots of the group's log go (null in the embedded mode). */
  snapshotStats(): SnapshotStats | null {
    return this.log ? { ...this.log.snapshotStats } : null;
  }

  async reconfigure(group: NodeGroup): Promise<void> {
    if (this.reloading) await this.settle();
    this.model.reconfigure(group, Date.now());
    await this.commit(this.model.takeEffects(), true);
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.commits.settled();
    // A catch-up under way holds a cursor on the store: let it end first (bounded: it times out).
    for (let i = 0; i < 100 && this.syncing; i++) await new Promise((r) => setTimeout(r, 50));
    await this.log?.close();
    await this.store.close();
  }
}

export type GroupApi = GroupActor;

surviveCommitFailures((message) => console.error(message));
Comlink.expose(new GroupActor(), nodeEndpoint(parentPort!));
