// A node group's handle on the main thread: calls its actor (here, or in cluster mode forwarded
// to the instance that owns the group), gathers the lookups and heartbeats of one event-loop turn
// into one call each (Batcher), and starts the actor's worker thread, restarting it from LMDB
// when it dies; calls meanwhile fail with ActorUnavailable. The host (host.ts) holds the handles.
import { MessageChannel, Worker } from 'node:worker_threads';
import * as Comlink from 'comlink';
import type { NodeGroup } from '../src/config/types.js';
import type { EventBody } from '../src/domain/events.js';
import { guardedRemote, InFlight, nodeEndpoint } from './comlink.js';
import type { GroupApi, HeartbeatRequest, LookupRequest } from './group/actor.js';
import { FENCED_EVENT } from './group/signals.js';
import type { HeartbeatReply } from '../src/model/heartbeats.js';
import type { LookupOutcome } from '../src/model/lookups.js';
import type { KeptCooldowns } from './supervisor/directory.js';
import type { ActorHost } from './host.js';

export class ActorUnavailable extends Error {
  constructor(readonly group: string) {
    super(`the actor of node group '${group}' is not available`);
    this.name = 'ActorUnavailable';
  }
}

type Method<T> = { [K in keyof T]: T[K] extends (...args: never[]) => unknown ? K : never }[keyof T];
type Result<T, K extends keyof T> = T[K] extends (...args: never[]) => infer R ? Awaited<R> : never;
type Params<T, K extends keyof T> = T[K] extends (...args: infer P) => unknown ? P : never;

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
      (results) => {
        for (const [i, b] of batch.entries()) b.resolve(results[i]!);
      },
      (err) => {
        for (const b of batch) b.reject(err);
      },
    );
  }
}

export class GroupHandle {
  private worker: Worker | null = null;
  private api: ReturnType<typeof guardedRemote<GroupApi>> | null = null;
  private closing = false;
  private restarts = 0;
  /** The actor thread runs here and answers. */
  running = false;
  /** Cluster mode: the epoch this instance owns the group at, while it does. */
  private epoch: number | null = null;
  /** Being deleted: hidden from lookups while its nodes drain. */
  deleting = false;

  constructor(
    public group: NodeGroup,
    private readonly host: ActorHost,
  ) {}

  get name(): string {
    return this.group.name;
  }

  /** Its actor's thread exists on this instance (starting, running or closing). */
  get threadHere(): boolean {
    return this.worker !== null;
  }

  /** Its actor answers: here, or (cluster mode) on the instance that owns it. */
  get ready(): boolean {
    const c = this.host.options.cluster;
    return c ? this.local || c.owned(this.name) : this.running;
  }

  /** Cluster mode: calls go to the actor on this instance (it owns the group and its actor runs). */
  private get local(): boolean {
    const c = this.host.options.cluster;
    return this.running && (!c || c.serving(this.name));
  }

  /** Calls the actor; rejects with ActorUnavailable if it is starting or dies during the call (actors/comlink.ts). */
  async call<K extends Method<GroupApi>>(method: K, ...args: Params<GroupApi, K>): Promise<Result<GroupApi, K>> {
    const cluster = this.host.options.cluster;
    if (cluster && !this.local) return this.forward(method, args);
    try {
      return await this.callHere(method, ...args);
    } catch (err) {
      // Cluster mode: the group moved (or is moving) while the call was on its way.
      if (cluster && err instanceof ActorUnavailable && !this.local) return this.forward(method, args);
      throw err;
    }
  }

  private async forward<K extends Method<GroupApi>>(method: K, args: Params<GroupApi, K>): Promise<Result<GroupApi, K>> {
    const started = performance.now();
    try {
      return (await this.host.options.cluster!.forward(this.name, method as string, args)) as Result<GroupApi, K>;
    } catch (err) {
      if ((err as Error).name === 'NotServedHere') throw new ActorUnavailable(this.name);
      throw err;
    } finally {
      this.host.options.observe?.(`forward:${method as string}`, (performance.now() - started) / 1000);
    }
  }

  /** The actor on this thread's instance, never forwarded (the supervisor's wiring, a close). */
  async callHere<K extends Method<GroupApi>>(method: K, ...args: Params<GroupApi, K>): Promise<Result<GroupApi, K>> {
    const api = this.api;
    if (!this.running || !api) throw new ActorUnavailable(this.name);
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
    if (!this.host.options.cluster && (!this.running || !this.api)) return Promise.reject(new ActorUnavailable(this.name));
    return this.lookupBatch.add(args);
  }

  /** A node's heartbeat, batched like lookups. */
  heartbeat(...args: HeartbeatRequest): Promise<HeartbeatReply | null> {
    if (!this.host.options.cluster && (!this.running || !this.api)) return Promise.reject(new ActorUnavailable(this.name));
    return this.heartbeatBatch.add(args);
  }

  async start(): Promise<void> {
    let worker: Worker | undefined;
    // A spec replaced while this thread loads is applied before it serves (the load used this one).
    const spec = this.group;
    try {
      // Cluster mode: a thread loaded in advance, when there is one (a takeover's start is mostly a thread's).
      const spare = (await this.host.spares?.take()) ?? null;
      worker = spare ? this.adopt(spare.worker) : this.spawn();
      const w = worker;
      const inFlight = spare?.inFlight ?? new InFlight();
      const api = spare?.api ?? guardedRemote<GroupApi>(nodeEndpoint(w), inFlight);
      const events = new MessageChannel();
      events.port1.on('message', (batch: EventBody[]) => {
        if ((batch[0]?.type as string) === FENCED_EVENT) return this.host.options.cluster?.fenced(this.name);
        this.host.options.onEvents(batch);
      });
      w.once('exit', (code) => {
        events.port1.close();
        inFlight.fail(new ActorUnavailable(this.name));
        if (this.worker === w) this.onExit(code);
      });
      w.on('error', (err) => this.host.options.onError?.(this.name, err));
      await api.init(
        Comlink.transfer(
          {
            group: this.group,
            dataDir: this.host.options.dataDir,
            durability: this.host.options.durability,
            ...(this.host.options.minFreeBytes !== undefined ? { minFreeBytes: this.host.options.minFreeBytes } : {}),
            ...(this.host.options.cluster && this.epoch !== null
              ? { cluster: { servers: this.host.options.cluster.servers, instance: this.host.options.cluster.instance, epoch: this.epoch, snapshot: this.host.options.cluster.snapshot } }
              : {}),
            events: events.port2,
          },
          [events.port2],
        ),
      );
      if (this.group !== spec) await api.reconfigure(this.group);
      this.api = api;
      this.running = true;
      await this.host.connect(this);
      // Removed while connecting: the supervisor must not keep a group that is gone.
      if (this.closing) {
        await this.host.supervisor?.detachGroup(this.name);
        throw new ActorUnavailable(this.name);
      }
    } catch (err) {
      // A thread that cannot load or be connected to the supervisor is ended and tried again,
      // with this reason (not the exit code its ending would report).
      this.running = false;
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
    return this.adopt(new Worker(new URL('./group/actor.js', import.meta.url), { name: `group:${this.name}` }));
  }

  private adopt(worker: Worker): Worker {
    this.worker = worker;
    return worker;
  }

  private downSince = 0;
  private restartTimer: NodeJS.Timeout | null = null;

  private onExit(code: number): void {
    this.running = false;
    this.api = null;
    this.worker = null;
    this.scheduleRestart(`the actor thread exited with code ${code}`);
  }

  /** One restart at a time, backing off to 5 s; an attempt that fails schedules the next. */
  private scheduleRestart(reason: string): void {
    if (this.closing || this.restartTimer) return;
    // Cluster mode: restarted only while this instance still owns the group.
    if (this.host.options.cluster && this.epoch === null) return;
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
    if (this.api && this.running) await this.callHere('close').catch(() => {});
    this.running = false;
    await this.worker?.terminate();
  }

  /** Cluster mode: the cooldowns the group's previous owner left, for this instance's supervisor. */
  kept: KeptCooldowns | undefined;

  /** Cluster mode: this instance acquired the group at `epoch`: its actor loads, fences the log, serves. */
  async activate(epoch: number, kept?: KeptCooldowns): Promise<void> {
    this.epoch = epoch;
    this.kept = kept;
    this.closing = false;
    await this.start();
  }

  /**
   * Cluster mode: the group is no longer this instance's. Calls go elsewhere at once; the actor
   * finishes the commits it has, and its thread ends (it may be started again, at a later epoch).
   */
  async deactivate(): Promise<void> {
    this.epoch = null;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = null;
    this.restarts = 0;
    const api = this.api;
    const wasRunning = this.running;
    this.running = false;
    this.api = null;
    await this.host.supervisor?.detachGroup(this.name).catch(() => {});
    if (api && wasRunning) await api.close().catch(() => {});
    const w = this.worker;
    this.worker = null;
    await w?.terminate();
  }
}
