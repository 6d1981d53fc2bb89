// Worker-thread entry of a node-group actor. It owns one GroupModel, loads it from LMDB, and
// commits the writes each call causes before answering a call that acknowledges them. The front
// end reaches it through comlink on the parent port; the supervisor through comlink on a port of
// its own; events leave on a third port.
import { parentPort, type MessagePort } from 'node:worker_threads';
import { getHeapStatistics } from 'node:v8';
import * as Comlink from 'comlink';
import type { NodeGroup } from '../../src/config/types.js';
import type { EventBody } from '../../src/domain/events.js';
import type { NodeAddress, PlatformData, Provision, Rendition } from '../../src/domain/records.js';
import type { NodeEvent } from '../../src/policy/states.js';
import type { NodeState, Role } from '../../src/domain/vocabulary.js';
import type { Database } from 'lmdb';
import { groupRange, openStore, type GroupKey, type Store } from '../../src/store/store.js';
import { stored, surviveCommitFailures } from '../../src/store/failures.js';
import { nodeEndpoint } from '../comlink.js';
import { planGroup, type GroupPlan, type PlanInput } from '../../src/policy/scaling/plan.js';
import { GroupModel, type Failure, type HeartbeatInput, type HeartbeatReply, type LookupOutcome, type NodeFacts, type NodeLoad, type NodeView, type StreamView, type Effects } from './model.js';

export type LookupKind = 'publish' | 'transcode' | 'subscribe';

export interface GroupInit {
  group: NodeGroup;
  dataDir: string;
  durability: 'commit' | 'flush';
  events: MessagePort;
  minFreeBytes?: number;
}

export interface GroupDetail {
  name: string;
  nodes: NodeView[];
  nodeCount: number;
}

export interface GroupCounts {
  name: string;
  nodes: Array<{ role: Role; region: string; state: NodeState; count: number }>;
  bindings: { PENDING: number; LIVE: number };
  provisions: number;
  load: Array<{ role: Role; connections: number; capacity: number }>;
}


class GroupActor {
  private model!: GroupModel;
  private store!: Store;
  private events!: MessagePort;
  private supervisorPort: MessagePort | null = null;
  /** Commits are failing (disk full, read-only): refused until one succeeds again. */
  private failing = false;
  /** Why the last commit was refused, for the answer to the request that asked for it. */
  private refusal = 'the data store refused the write';

  /**
   * While the bindings are still being loaded in the background: the streams removed meanwhile,
   * so that the loader's older view of the store cannot bring them back. Null once loaded.
   */
  private removedWhileLoading: Set<string> | null = null;

  async init(init: GroupInit): Promise<void> {
    this.store = openStore(init.dataDir, init.durability, init.minFreeBytes);
    this.events = init.events;
    this.model = this.load(init.group);
    this.loaded = this.loadBindings();
  }

  /** Settles when every stored binding is in memory. */
  private loaded: Promise<void> = Promise.resolve();

  /** The supervisor's own channel to this actor (a new one after either side restarts). */
  attachSupervisor(port: MessagePort): void {
    this.supervisorPort?.close();
    this.supervisorPort = port;
    Comlink.expose(this, nodeEndpoint(port));
  }

  /** Nodes and provisions now; the bindings (there may be millions) follow in the background. */
  private load(group: NodeGroup): GroupModel {
    const model = new GroupModel(group);
    model.restore(groupRange(this.store.nodes, group.name), [], groupRange(this.store.provisions, group.name), Date.now());
    this.removedWhileLoading = new Set();
    return model;
  }

  /** Loads the stored bindings in chunks, letting calls in between; a call that needs one first reads it itself. */
  private async loadBindings(): Promise<void> {
    const model = this.model;
    const group = model.name;
    let after = '';
    for (;;) {
      let last: string | undefined;
      const removed = this.removedWhileLoading;
      if (!removed || this.model !== model) return;
      const now = Date.now();
      for (const { value } of this.store.bindings.getRange({ start: [group, after], end: [`${group}\u0000`, ''], limit: 20_000 })) {
        last = value.stream;
        if (!removed.has(value.stream)) model.adoptBinding(value, now);
      }
      if (last === undefined) break;
      after = `${last}\u0000`;
      await new Promise((r) => setImmediate(r));
    }
    if (this.model === model) this.removedWhileLoading = null;
  }

  private tally(started: number, lookups: number, heartbeats: number): void {
    this.busy.seconds += (performance.now() - started) / 1000;
    this.busy.lookups += lookups;
    this.busy.heartbeats += heartbeats;
    this.busy.batches += 1;
  }

  /** Makes sure the bindings a call is about are in memory (only needed while they are loading). */
  private need(names: Iterable<string>): void {
    const removed = this.removedWhileLoading;
    if (!removed) return;
    const now = Date.now();
    for (const name of names) {
      const stream = this.model.streamOf(name);
      if (this.model.hasBinding(stream) || removed.has(stream)) continue;
      const record = this.store.bindings.get([this.model.name, stream]);
      if (record) this.model.adoptBinding(record, now);
    }
  }

  /**
   * Writes the effects in one transaction. With `acknowledge`, waits for the commit (and the
   * flush, when configured) so that the caller's 2xx means durable. A failed commit reloads the
   * model from the store, so memory never claims what the disk does not hold. The effects'
   * events go out once their writes are committed, in order, and not at all if they are refused.
   */
  private async commit(effects: Effects, acknowledge: boolean): Promise<boolean> {
    const group = this.model.name;
    if (effects.writes.length === 0) {
      this.post(effects.events, Promise.resolve(true));
      return true;
    }
    if (this.removedWhileLoading) for (const w of effects.writes) if (w.kind === 'binding' && w.value === null) this.removedWhileLoading.add(w.key);
    const s = this.store;
    try {
      s.guard.check();
    } catch (err) {
      return this.failed(err, group);
    }
    const done = s.root.transaction(() => {
      for (const w of effects.writes) {
        const db = (w.kind === 'node' ? s.nodes : w.kind === 'binding' ? s.bindings : s.provisions) as Database<unknown, GroupKey>;
        if (w.value === null) db.remove([group, w.key]);
        else db.put([group, w.key], w.value);
      }
    });
    const committed = stored(done).then(
      () => true,
      (err: unknown) => this.failed(err, group),
    );
    this.post(effects.events, committed);
    if (!(await committed)) return false;
    try {
      if (acknowledge) await stored(s.durable());
    } catch (err) {
      return this.failed(err, group);
    }
    if (this.failing) {
      this.failing = false;
      this.emit([{ type: 'store.recovered', group }]);
    }
    return true;
  }

  /** Settles when the events of the last commit are out: later ones wait, so the log keeps their order. */
  private posted: Promise<void> = Promise.resolve();

  private post(events: EventBody[], committed: Promise<boolean>): void {
    if (events.length === 0) return;
    this.posted = this.posted
      .then(() => committed)
      .then((ok) => {
        if (ok) this.events.postMessage(events);
      })
      .catch(() => {});
  }

  private failed(err: unknown, group: string): false {
    this.refusal = (err as Error).message;
    // The answer and the event say why in general terms; the log keeps the store's own words
    // (once per outage, as the event).
    if (!this.failing) console.error(`node group '${group}': a data store write failed:`, (err as { cause?: unknown }).cause ?? err);
    if (!this.failing) this.emit([{ type: 'store.unavailable', group, message: (err as Error).message }]);
    this.failing = true;
    // Memory must not claim what the disk does not hold: start again from what it does.
    this.model = this.load(this.model.group);
    this.loaded = this.loadBindings();
    return false;
  }

  private refused(): Failure {
    return { ok: false, status: 503, code: 'STORE_UNAVAILABLE', detail: `${this.refusal}; nothing was changed, reads go on`, retryAfter: 5 };
  }

  private emit(events: EventBody[]): void {
    this.events.postMessage(events);
  }

  /** The supervisor's events about this group: out on this actor's port, after those of earlier commits. */
  announce(events: EventBody[]): void {
    this.post(events, Promise.resolve(true));
  }

  // ---- front end ----------------------------------------------------------------------------

  /** `by`: the token subject asking (a new PENDING binding counts against its cap). */
  async lookup(kind: LookupKind, stream: string, regions: string[], by: string | null = null): Promise<LookupOutcome> {
    const now = Date.now();
    this.need([stream]);
    const outcome = kind === 'publish' ? this.model.publish(stream, regions, now, by) : kind === 'transcode' ? this.model.transcode(stream, regions, now, by) : this.model.subscribe(stream, regions, now);
    const effects = this.model.drain();
    if (!(await this.commit(effects, effects.writes.length > 0))) return this.refused();
    return outcome;
  }

  /** Many lookups at once: decided in order, their writes committed together before any answer. */
  async lookups(batch: Array<[LookupKind, string, string[], (string | null)?]>): Promise<LookupOutcome[]> {
    const started = performance.now();
    const now = Date.now();
    const m = this.model;
    if (this.removedWhileLoading) this.need(batch.map((b) => b[1]));
    const outcomes = batch.map(([kind, stream, regions, by = null]) => (kind === 'publish' ? m.publish(stream, regions, now, by) : kind === 'transcode' ? m.transcode(stream, regions, now, by) : m.subscribe(stream, regions, now)));
    const effects = m.drain();
    this.tally(started, batch.length, 0);
    if (!(await this.commit(effects, effects.writes.length > 0))) return batch.map(() => this.refused());
    return outcomes;
  }

  async heartbeats(batch: Array<[string, HeartbeatInput]>): Promise<Array<HeartbeatReply | null>> {
    const now = Date.now();
    const loading = this.removedWhileLoading !== null;
    if (loading) this.need(batch.flatMap(([, hb]) => (hb.streams ?? []).map((s) => s.name)));
    const started = performance.now();
    const replies = batch.map(([nodeId, hb]) => this.model.heartbeat(nodeId, hb, now));
    // A transcoder's jobs come from bindings: until all are loaded, say nothing rather than too little.
    if (loading) for (const r of replies) if (r) delete r.transcode;
    this.tally(started, 0, batch.length);
    void this.commit(this.model.drain(), false);
    return replies;
  }

  async heartbeat(nodeId: string, hb: HeartbeatInput): Promise<HeartbeatReply | null> {
    this.need((hb.streams ?? []).map((s) => s.name));
    const reply = this.model.heartbeat(nodeId, hb, Date.now());
    if (reply && this.removedWhileLoading) delete reply.transcode;
    // Heartbeat writes are facts the next heartbeat repeats: no need to hold the reply for them.
    void this.commit(this.model.drain(), false);
    return reply;
  }

  async putProvision(input: { streamName: string; region: string; streams: Rendition[] }, mode: 'create' | 'replace'): Promise<{ ok: true; provision: Provision } | Failure> {
    const result = this.model.putProvision(input, mode, Date.now());
    if (!(await this.commit(this.model.drain(), true))) return this.refused();
    return result;
  }

  async deleteProvision(name: string): Promise<{ ok: true } | Failure> {
    const result = this.model.deleteProvision(name);
    if (!(await this.commit(this.model.drain(), true))) return this.refused();
    return result;
  }

  getProvision(name: string): Provision | undefined {
    return this.model.getProvision(name);
  }

  listProvisions(after: string | undefined, limit: number): Provision[] {
    return this.model.provisionList(after, limit);
  }

  async listStreams(after: string | undefined, limit: number): Promise<StreamView[]> {
    await this.loaded;
    return this.model.streams(after, limit);
  }

  detail(after: string | undefined, limit: number): GroupDetail {
    return { name: this.model.name, nodes: this.model.nodeViews(after, limit), nodeCount: this.model.nodeCount() };
  }

  /** Per-node load figures for /as/v1/metrics, bounded (GroupModel.nodeLoads). */
  nodeLoads(cap: number): { nodes: NodeLoad[]; omitted: number } {
    return this.model.nodeLoads(cap);
  }

  hasNode(id: string): boolean {
    return this.model.hasNode(id);
  }

  async counts(): Promise<GroupCounts> {
    await this.loaded;
    return { name: this.model.name, ...this.model.counts(), load: this.model.load() };
  }

  // ---- supervisor ---------------------------------------------------------------------------

  facts(): NodeFacts[] {
    return this.model.facts();
  }

  /**
   * The supervisor's plan for this group, made here where the facts are (see planGroup). It waits
   * for the events of earlier changes to be out, so that what the supervisor reports of the plan
   * (a scaling decision, a blocked rule) follows them in the event log.
   */
  async plan(input: Omit<PlanInput, 'group' | 'nodes'> & { retiring: boolean }): Promise<GroupPlan> {
    await this.posted;
    return planGroup({ ...input, group: this.model.group, nodes: this.model.facts() });
  }

  async tick(now: number): Promise<void> {
    this.model.tick(now);
    await this.commit(this.model.drain(), false);
  }

  async addNodes(specs: Array<{ id: string; role: Role; region: string; platform: PlatformData; state?: NodeState }>, now: number): Promise<boolean> {
    for (const spec of specs) if (!this.model.hasNode(spec.id)) this.model.addNode(spec, now);
    return this.commit(this.model.drain(), true);
  }

  async nodeEvent(id: string, event: NodeEvent, now: number, patch?: { platform?: PlatformData; address?: NodeAddress }): Promise<{ ok: true; state: NodeState | null } | { ok: false; reason: string }> {
    const result = this.model.applyNodeEvent(id, event, now, patch);
    if (!(await this.commit(this.model.drain(), true))) return { ok: false, reason: this.refusal };
    return result;
  }

  /** Many state-machine events in one call and one commit (reconciliation at start touches every node). */
  async nodeEvents(events: Array<{ id: string; event: NodeEvent }>, now: number): Promise<Array<{ ok: true; state: NodeState | null } | { ok: false; reason: string }>> {
    const results = events.map((e) => this.model.applyNodeEvent(e.id, e.event, now));
    if (!(await this.commit(this.model.drain(), true))) return events.map(() => ({ ok: false as const, reason: this.refusal }));
    return results;
  }

  /** Time spent deciding batched lookups and heartbeats (not waiting for LMDB), and how many. */
  private busy = { seconds: 0, lookups: 0, heartbeats: 0, batches: 0 };

  /** The actor thread's heap and busy time, for metrics and the benches. */
  stats(): { heapUsed: number; busySeconds: number; lookups: number; heartbeats: number; batches: number } {
    return { heapUsed: getHeapStatistics().used_heap_size, busySeconds: this.busy.seconds, lookups: this.busy.lookups, heartbeats: this.busy.heartbeats, batches: this.busy.batches };
  }

  async reconfigure(group: NodeGroup): Promise<void> {
    this.model.reconfigure(group, Date.now());
    await this.commit(this.model.drain(), true);
  }

  async close(): Promise<void> {
    await this.store.root.committed;
    await this.store.close();
  }
}

export type GroupApi = GroupActor;

surviveCommitFailures((message) => console.error(message));
Comlink.expose(new GroupActor(), nodeEndpoint(parentPort!));
