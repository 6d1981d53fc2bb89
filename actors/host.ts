// Starts the actors on worker threads and wires them together:
//   front end ──comlink──▶ group actor (one per node group)
//   supervisor ──comlink (own MessageChannel)──▶ group actor
//   group actor, supervisor ──events port──▶ front end (event log, SSE, capacity requests)
// A group actor that dies is started again from LMDB; calls meanwhile fail with ActorUnavailable.
import { MessageChannel, Worker } from 'node:worker_threads';
import * as Comlink from 'comlink';
import type { NodeGroup } from '../src/config/types.js';
import type { EventBody } from '../src/domain/events.js';
import { guardedRemote, InFlight, nodeEndpoint } from './comlink.js';
import type { GroupApi, HeartbeatRequest, LookupRequest } from './group/actor.js';
import type { HeartbeatReply } from '../src/model/heartbeats.js';
import type { LookupOutcome } from '../src/model/lookups.js';
import type { SupervisorApi, SupervisorInit } from './supervisor/actor.js';

export class ActorUnavailable extends Error {
  constructor(readonly group: string) {
    super(`the actor of node group '${group}' is not available`);
    this.name = 'ActorUnavailable';
  }
}

type Method<T> = { [K in keyof T]: T[K] extends (...args: never[]) => unknown ? K : never }[keyof T];
type Result<T, K extends keyof T> = T[K] extends (...args: never[]) => infer R ? Awaited<R> : never;
type Params<T, K extends keyof T> = T[K] extends (...args: infer P) => unknown ? P : never;

export interface HostOptions {
  dataDir: string;
  durability: 'commit' | 'flush';
  minFreeBytes?: number;
  onEvents(events: EventBody[]): void;
  /** Seconds a call to an actor took, by method. */
  observe?(method: string, seconds: number): void;
  onError?(group: string, err: Error): void;
}

/**
 * Gathers the calls of one event-loop turn (every request parsed in it) into one call: one
 * message each way instead of one per request, and one LMDB commit for the writes of all of them.
 */
class Batcher<A, R> {
  private queue: Array<{ args: A; resolve(r: R): void; reject(e: unknown): void }> = [];

  constructor(
    private readonly send: (batch: A[]) => Promise<R[]>,
    private readonly max = 512,
  ) {}

  add(args: A): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ args, resolve, reject });
      if (this.queue.length === 1) setImmediate(() => this.flush());
      else if (this.queue.length >= this.max) this.flush();
    });
  }

  private flush(): void {
    const batch = this.queue;
    if (batch.length === 0) return;
    this.queue = [];
    this.send(batch.map((b) => b.args)).then(
      (results) => batch.forEach((b, i) => b.resolve(results[i]!)),
      (err) => batch.forEach((b) => b.reject(err)),
    );
  }
}

export class GroupHandle {
  private worker: Worker | null = null;
  private api: ReturnType<typeof guardedRemote<GroupApi>> | null = null;
  private closing = false;
  private restarts = 0;
  ready = false;
  /** Being deleted: hidden from lookups while its nodes drain. */
  deleting = false;

  constructor(
    public group: NodeGroup,
    private readonly host: ActorHost,
  ) {}

  get name(): string {
    return this.group.name;
  }

  /** Calls the actor; rejects with ActorUnavailable if it is starting or dies during the call (actors/comlink.ts). */
  async call<K extends Method<GroupApi>>(method: K, ...args: Params<GroupApi, K>): Promise<Result<GroupApi, K>> {
    const api = this.api;
    if (!this.ready || !api) throw new ActorUnavailable(this.name);
    const started = performance.now();
    try {
      const send = api[method] as unknown as (...a: Params<GroupApi, K>) => Promise<Result<GroupApi, K>>;
      return await send(...args);
    } finally {
      this.host.options.observe?.(method as string, (performance.now() - started) / 1000);
    }
  }

  private readonly lookupBatch = new Batcher<LookupRequest, LookupOutcome>((batch) => this.call('lookups', batch));
  private readonly heartbeatBatch = new Batcher<HeartbeatRequest, HeartbeatReply | null>((batch) => this.call('heartbeats', batch));

  /** A lookup, sent with the others of this event-loop turn in one message and one commit. */
  lookup(...args: LookupRequest): Promise<LookupOutcome> {
    if (!this.ready || !this.api) return Promise.reject(new ActorUnavailable(this.name));
    return this.lookupBatch.add(args);
  }

  /** A node's heartbeat, batched like lookups. */
  heartbeat(...args: HeartbeatRequest): Promise<HeartbeatReply | null> {
    if (!this.ready || !this.api) return Promise.reject(new ActorUnavailable(this.name));
    return this.heartbeatBatch.add(args);
  }

  async start(): Promise<void> {
    let worker: Worker | undefined;
    // A spec replaced while this thread loads is applied before it serves (the load used this one).
    const spec = this.group;
    try {
      worker = this.spawn();
      const w = worker;
      const inFlight = new InFlight();
      const api = guardedRemote<GroupApi>(nodeEndpoint(w), inFlight);
      const events = new MessageChannel();
      events.port1.on('message', (batch: EventBody[]) => this.host.options.onEvents(batch));
      w.once('exit', (code) => {
        events.port1.close();
        inFlight.fail(new ActorUnavailable(this.name));
        if (this.worker === w) this.onExit(code);
      });
      w.on('error', (err) => this.host.options.onError?.(this.name, err));
      await api.init(
        Comlink.transfer(
          { group: this.group, dataDir: this.host.options.dataDir, durability: this.host.options.durability, ...(this.host.options.minFreeBytes !== undefined ? { minFreeBytes: this.host.options.minFreeBytes } : {}), events: events.port2 },
          [events.port2],
        ),
      );
      if (this.group !== spec) await api.reconfigure(this.group);
      this.api = api;
      this.ready = true;
      await this.host.connect(this);
      // Removed while connecting: the supervisor must not keep a group that is gone.
      if (this.closing) {
        await this.host.supervisor?.detachGroup(this.name);
        throw new ActorUnavailable(this.name);
      }
    } catch (err) {
      // A thread that cannot load or be connected to the supervisor is ended and tried again,
      // with this reason (not the exit code its ending would report).
      this.ready = false;
      this.api = null;
      if (worker && this.worker === worker) {
        this.worker = null;
        await worker.terminate();
      }
      this.scheduleRestart(`the actor did not start: ${(err as Error).message}`);
      throw err;
    }
  }

  private spawn(): Worker {
    const worker = new Worker(new URL('./group/actor.js', import.meta.url), { name: `group:${this.name}` });
    this.worker = worker;
    return worker;
  }

  private downSince = 0;
  private restartTimer: NodeJS.Timeout | null = null;

  private onExit(code: number): void {
    this.ready = false;
    this.api = null;
    this.worker = null;
    this.scheduleRestart(`the actor thread exited with code ${code}`);
  }

  /** One restart at a time, backing off to 5 s; an attempt that fails schedules the next. */
  private scheduleRestart(reason: string): void {
    if (this.closing || this.restartTimer) return;
    if (this.restarts === 0) this.downSince = Date.now();
    const delay = Math.min(5000, 100 * 2 ** this.restarts++);
    this.host.options.onEvents([{ type: 'actor.crashed', group: this.name, reason: `${reason}; restarting from the store in ${delay} ms` }]);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      if (this.closing) return;
      this.start().then(
        () => {
          this.restarts = 0;
          this.host.options.onEvents([{ type: 'actor.restarted', group: this.name, downMs: Date.now() - this.downSince }]);
        },
        (err: Error) => this.host.options.onError?.(this.name, err),
      );
    }, delay);
    this.restartTimer.unref();
  }

  async reconfigure(group: NodeGroup): Promise<void> {
    // A thread that dies meanwhile is started again from this spec, so its death changes nothing.
    this.group = group;
    await this.host.supervisor?.reconfigure(group);
    try {
      await this.call('reconfigure', group);
    } catch (err) {
      if (!(err instanceof ActorUnavailable)) throw err;
    }
  }

  /** For tests of crash recovery: ends the thread as a crash would. */
  async crash(): Promise<void> {
    await this.worker?.terminate();
  }

  /** No more restarts, and a start under way gives up: the group is being stopped or removed. */
  close(): void {
    this.closing = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = null;
  }

  async stop(): Promise<void> {
    this.close();
    if (this.api && this.ready) await this.call('close').catch(() => {});
    this.ready = false;
    await this.worker?.terminate();
  }
}

export class ActorHost {
  readonly groups = new Map<string, GroupHandle>();
  supervisor: Comlink.Remote<SupervisorApi> | null = null;
  private supervisorWorker: Worker | null = null;

  constructor(readonly options: HostOptions) {}

  /** Every group at start; one whose thread cannot start is listed and restarted, not fatal. */
  async startGroups(groups: readonly NodeGroup[]): Promise<void> {
    const results = await Promise.allSettled(groups.map((g) => this.addGroup(g)));
    results.forEach((r, i) => {
      if (r.status === 'rejected') this.options.onError?.(groups[i]!.name, r.reason as Error);
    });
  }

  /**
   * Starts a group's actor and only then lists the group: until it is, calls that go over every
   * group (the stream list) would find it not ready and answer 503 for a group not yet created.
   * A first start that fails lists it too: its thread is started again, as after a crash.
   */
  async addGroup(group: NodeGroup): Promise<GroupHandle> {
    const handle = new GroupHandle(group, this);
    this.starting.add(handle);
    try {
      await handle.start();
    } finally {
      this.starting.delete(handle);
      if (!this.stopping) this.groups.set(group.name, handle);
      // Started while the host was stopping, after stop() had looked: stopped here instead.
      else await handle.stop();
    }
    return handle;
  }

  /** Groups whose first start is under way: not listed yet, but stopped with the rest. */
  private readonly starting = new Set<GroupHandle>();
  private stopping = false;

  async removeGroup(name: string): Promise<void> {
    const handle = this.groups.get(name);
    handle?.close();
    this.groups.delete(name);
    await this.supervisor?.detachGroup(name);
    await handle?.stop();
  }

  group(name: string): GroupHandle | undefined {
    return this.groups.get(name);
  }

  async startSupervisor(init: Omit<SupervisorInit, 'events'>): Promise<void> {
    const worker = new Worker(new URL('./supervisor/actor.js', import.meta.url), { name: 'supervisor' });
    worker.on('error', (err) => this.options.onError?.('supervisor', err));
    const api = Comlink.wrap<SupervisorApi>(nodeEndpoint(worker));
    const events = new MessageChannel();
    events.port1.on('message', (batch: EventBody[]) => this.options.onEvents(batch));
    await api.start(Comlink.transfer({ ...init, events: events.port2 }, [events.port2]));
    this.supervisor = api;
    this.supervisorWorker = worker;
    for (const handle of this.groups.values()) if (handle.ready) await this.connect(handle);
  }

  /** Gives the supervisor and a group actor a channel of their own (again, after a restart). */
  async connect(handle: GroupHandle): Promise<void> {
    if (!this.supervisor) return;
    const channel = new MessageChannel();
    await handle.call('attachSupervisor', Comlink.transfer(channel.port2, [channel.port2]));
    // A group deleted while its thread was down is still being retired by the one that follows.
    await this.supervisor.attachGroup(handle.group, Comlink.transfer(channel.port1, [channel.port1]), handle.deleting);
  }

  async stop(stopNodes: boolean): Promise<void> {
    this.stopping = true;
    if (this.supervisor) {
      await this.supervisor.stop(stopNodes).catch((err: Error) => this.options.onError?.('supervisor', err));
      await this.supervisorWorker?.terminate();
      this.supervisor = null;
    }
    await Promise.all([...this.groups.values(), ...this.starting].map((g) => g.stop()));
  }
}
