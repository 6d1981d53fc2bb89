// Worker-thread entry of a node-group actor. It owns one GroupModel, loads it from LMDB, and
// commits the writes each call causes before answering a call that acknowledges them. The front
// end reaches it through comlink on the parent port; the supervisor through comlink on a port of
// its own; events leave on a third port.
import { parentPort, type MessagePort } from 'node:worker_threads';
import * as Comlink from 'comlink';
import type { NodeGroup } from '../../src/config/types.js';
import type { EventBody } from '../../src/domain/events.js';
import type { NodeAddress, PlatformData, Provision, Rendition } from '../../src/domain/records.js';
import type { NodeEvent } from '../../src/domain/states.js';
import type { NodeState, Role } from '../../src/domain/vocabulary.js';
import type { Database } from 'lmdb';
import { groupRange, openStore, type GroupKey, type Store } from '../../src/store/store.js';
import { nodeEndpoint } from '../comlink.js';
import { GroupModel, type Failure, type HeartbeatInput, type HeartbeatReply, type LookupOutcome, type NodeFacts, type NodeView, type StreamView, type Effects } from './model.js';

export type LookupKind = 'publish' | 'transcode' | 'subscribe';

export interface GroupInit {
  group: NodeGroup;
  dataDir: string;
  durability: 'commit' | 'flush';
  events: MessagePort;
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

const STORE_FAILURE: Failure = {
  ok: false,
  status: 503,
  code: 'STORE_UNAVAILABLE',
  detail: 'the data store refused the write; nothing was changed',
  retryAfter: 5,
};

class GroupActor {
  private model!: GroupModel;
  private store!: Store;
  private events!: MessagePort;
  private supervisorPort: MessagePort | null = null;
  /** Serialises commits that follow a failed one, so the model is reloaded once and in order. */
  private broken = false;

  async init(init: GroupInit): Promise<void> {
    this.store = openStore(init.dataDir, init.durability);
    this.events = init.events;
    this.model = this.load(init.group);
  }

  /** The supervisor's own channel to this actor (a new one after either side restarts). */
  attachSupervisor(port: MessagePort): void {
    this.supervisorPort?.close();
    this.supervisorPort = port;
    Comlink.expose(this, nodeEndpoint(port));
  }

  private load(group: NodeGroup): GroupModel {
    const model = new GroupModel(group);
    const name = group.name;
    model.restore(groupRange(this.store.nodes, name), groupRange(this.store.bindings, name), groupRange(this.store.provisions, name), Date.now());
    return model;
  }

  /**
   * Writes the effects in one transaction. With `acknowledge`, waits for the commit (and the
   * flush, when configured) so that the caller's 2xx means durable. A failed commit reloads the
   * model from the store, so memory never claims what the disk does not hold.
   */
  private async commit(effects: Effects, acknowledge: boolean): Promise<boolean> {
    const group = this.model.name;
    if (effects.events.length > 0) this.events.postMessage(effects.events);
    if (effects.writes.length === 0) return true;
    const s = this.store;
    const done = s.root.transaction(() => {
      for (const w of effects.writes) {
        const db = (w.kind === 'node' ? s.nodes : w.kind === 'binding' ? s.bindings : s.provisions) as Database<unknown, GroupKey>;
        if (w.value === null) db.remove([group, w.key]);
        else db.put([group, w.key], w.value);
      }
    });
    try {
      await done;
      if (acknowledge) await s.durable();
      return true;
    } catch (err) {
      if (!this.broken) {
        this.broken = true;
        this.emit([{ type: 'platform.error', group, operation: 'store.write', message: (err as Error).message }]);
        this.model = this.load(this.model.group);
        this.broken = false;
      }
      return false;
    }
  }

  private emit(events: EventBody[]): void {
    this.events.postMessage(events);
  }

  // ---- front end ----------------------------------------------------------------------------

  async lookup(kind: LookupKind, stream: string, regions: string[]): Promise<LookupOutcome> {
    const now = Date.now();
    const outcome = kind === 'publish' ? this.model.publish(stream, regions, now) : kind === 'transcode' ? this.model.transcode(stream, regions, now) : this.model.subscribe(stream, regions, now);
    const effects = this.model.drain();
    if (!(await this.commit(effects, effects.writes.length > 0))) return STORE_FAILURE;
    return outcome;
  }

  /** Many lookups at once: decided in order, their writes committed together before any answer. */
  async lookups(batch: Array<[LookupKind, string, string[]]>): Promise<LookupOutcome[]> {
    const now = Date.now();
    const m = this.model;
    const outcomes = batch.map(([kind, stream, regions]) => (kind === 'publish' ? m.publish(stream, regions, now) : kind === 'transcode' ? m.transcode(stream, regions, now) : m.subscribe(stream, regions, now)));
    const effects = m.drain();
    if (!(await this.commit(effects, effects.writes.length > 0))) return batch.map(() => STORE_FAILURE);
    return outcomes;
  }

  async heartbeats(batch: Array<[string, HeartbeatInput]>): Promise<Array<HeartbeatReply | null>> {
    const now = Date.now();
    const replies = batch.map(([nodeId, hb]) => this.model.heartbeat(nodeId, hb, now));
    void this.commit(this.model.drain(), false);
    return replies;
  }

  async heartbeat(nodeId: string, hb: HeartbeatInput): Promise<HeartbeatReply | null> {
    const reply = this.model.heartbeat(nodeId, hb, Date.now());
    // Heartbeat writes are facts the next heartbeat repeats: no need to hold the reply for them.
    void this.commit(this.model.drain(), false);
    return reply;
  }

  async putProvision(input: { streamName: string; region: string; streams: Rendition[] }, mode: 'create' | 'replace'): Promise<{ ok: true; provision: Provision } | Failure> {
    const result = this.model.putProvision(input, mode, Date.now());
    if (!(await this.commit(this.model.drain(), true))) return STORE_FAILURE;
    return result;
  }

  async deleteProvision(name: string): Promise<{ ok: true } | Failure> {
    const result = this.model.deleteProvision(name);
    if (!(await this.commit(this.model.drain(), true))) return STORE_FAILURE;
    return result;
  }

  getProvision(name: string): Provision | undefined {
    return this.model.getProvision(name);
  }

  listProvisions(after: string | undefined, limit: number): Provision[] {
    return this.model.provisionList(after, limit);
  }

  listStreams(after: string | undefined, limit: number): StreamView[] {
    return this.model.streams(after, limit);
  }

  detail(after: string | undefined, limit: number): GroupDetail {
    return { name: this.model.name, nodes: this.model.nodeViews(after, limit), nodeCount: this.model.nodeCount() };
  }

  hasNode(id: string): boolean {
    return this.model.hasNode(id);
  }

  counts(): GroupCounts {
    return { name: this.model.name, ...this.model.counts(), load: this.model.load() };
  }

  // ---- supervisor ---------------------------------------------------------------------------

  facts(): NodeFacts[] {
    return this.model.facts();
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
    if (!(await this.commit(this.model.drain(), true))) return { ok: false, reason: 'the data store refused the write' };
    return result;
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

Comlink.expose(new GroupActor(), nodeEndpoint(parentPort!));
