// A node group's handle on the main thread: calls its actor (here, or in cluster mode forwarded
// to the instance that owns the group), gathers the lookups and heartbeats of one event-loop turn
// into one call each (Batcher), and runs the actor's worker thread as a SupervisedWorker, restarted
// from LMDB when it dies; calls meanwhile fail with ActorUnavailable. The host (host.ts) holds the
// handles and gives each a GroupContext (group-context.ts): all a handle knows of the service.
import * as Comlink from 'comlink';
import type { NodeGroup } from '../src/config/types.js';
import type { GroupApi, HeartbeatRequest, LookupRequest } from './group/actor.js';
import { FENCED_EVENT } from './group/signals.js';
import type { HeartbeatReply } from '../src/model/heartbeats.js';
import type { LookupOutcome } from '../src/model/lookups.js';
import type { GroupContext } from './group-context.js';
import { SupervisedWorker } from './supervised-worker.js';

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
  private readonly thread: SupervisedWorker<GroupApi>;
  /** Cluster mode: the epoch this instance owns the group at, while it does. */
  private epoch: number | null = null;
  /** Being deleted: hidden from lookups while its nodes drain. */
  deleting = false;

  constructor(
    public group: NodeGroup,
    private readonly context: GroupContext,
  ) {
    this.thread = new SupervisedWorker<GroupApi>({
      name: `group:${group.name}`,
      what: 'the actor',
      entry: new URL('./group/actor.js', import.meta.url),
      unavailable: () => new ActorUnavailable(this.name),
      // Cluster mode: a thread loaded in advance, when there is one (a takeover's start is mostly a thread's).
      adopt: () => context.spare(),
      init: async (api, events) => {
        // A spec replaced while this thread loads is applied before it serves (the load used this one).
        const spec = this.group;
        await api.init(Comlink.transfer({ ...this.initOf(spec), events }, [events]));
        if (this.group !== spec) await api.reconfigure(this.group);
      },
      connect: async (api) => {
        await context.connect(api, this.group, this.deleting);
        // Removed while connecting: the supervisor must not keep a group that is gone.
        if (this.thread.running && this.closed) await context.supervisor()?.detachGroup(this.name);
      },
      onEvents: ({ events, key }) => {
        if ((events[0]?.type as string) === FENCED_EVENT) return context.cluster?.fenced(this.name);
        context.onEvents(events, key);
      },
      onDown: (reason, delay) => context.onEvents([{ type: 'actor.crashed', group: this.name, reason: `${reason}; restarting from the store in ${delay} ms` }]),
      onRestarted: (downMs) => context.onEvents([{ type: 'actor.restarted', group: this.name, downMs }]),
      onError: (err) => context.onError?.(this.name, err),
      // Cluster mode: restarted only while this instance still owns the group.
      mayRestart: () => !context.cluster || this.epoch !== null,
    });
  }

  private closed = false;

  private initOf(group: NodeGroup) {
    const { dataDir, durability, minFreeBytes, cluster } = this.context;
    return {
      group,
      dataDir,
      durability,
      ...(minFreeBytes !== undefined ? { minFreeBytes } : {}),
      ...(cluster && this.epoch !== null ? { cluster: { servers: cluster.servers, instance: cluster.instance, epoch: this.epoch, snapshot: cluster.snapshot } } : {}),
    };
  }

  get name(): string {
    return this.group.name;
  }

  /** The actor thread runs here and answers. */
  get running(): boolean {
    return this.thread.running;
  }

  /** Its actor's thread exists on this instance (starting, running or closing). */
  get threadHere(): boolean {
    return this.thread.exists;
  }

  /** Its actor answers: here, or (cluster mode) on the instance that owns it. */
  get ready(): boolean {
    const c = this.context.cluster;
    return c ? this.local || c.owned(this.name) : this.running;
  }

  /** Cluster mode: calls go to the actor on this instance (it owns the group and its actor runs). */
  private get local(): boolean {
    const c = this.context.cluster;
    return this.running && (!c || c.serving(this.name));
  }

  /** Calls the actor; rejects with ActorUnavailable if it is starting or dies during the call (actors/comlink.ts). */
  async call<K extends Method<GroupApi>>(method: K, ...args: Params<GroupApi, K>): Promise<Result<GroupApi, K>> {
    const cluster = this.context.cluster;
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
      return (await this.context.cluster!.forward(this.name, method as string, args)) as Result<GroupApi, K>;
    } catch (err) {
      if ((err as Error).name === 'NotServedHere') throw new ActorUnavailable(this.name);
      throw err;
    } finally {
      this.context.observe?.(`forward:${method as string}`, (performance.now() - started) / 1000);
    }
  }

  /** The actor on this thread's instance, never forwarded (the supervisor's wiring, a close). */
  async callHere<K extends Method<GroupApi>>(method: K, ...args: Params<GroupApi, K>): Promise<Result<GroupApi, K>> {
    const api = this.thread.api;
    if (!api) throw new ActorUnavailable(this.name);
    const started = performance.now();
    try {
      const send = api[method] as unknown as (...a: Params<GroupApi, K>) => Promise<Result<GroupApi, K>>;
      return await send(...args);
    } finally {
      this.context.observe?.(method as string, (performance.now() - started) / 1000);
    }
  }

  private readonly lookupBatch = new Batcher<LookupRequest, LookupOutcome>((batch) => this.call('lookups', batch));
  private readonly heartbeatBatch = new Batcher<HeartbeatRequest, HeartbeatReply | null>((batch) => this.call('heartbeats', batch));

  /** A lookup, sent with the others of this event-loop turn in one message and one commit. */
  lookup(...args: LookupRequest): Promise<LookupOutcome> {
    if (!this.context.cluster && !this.running) return Promise.reject(new ActorUnavailable(this.name));
    return this.lookupBatch.add(args);
  }

  /** A node's heartbeat, batched like lookups. */
  heartbeat(...args: HeartbeatRequest): Promise<HeartbeatReply | null> {
    if (!this.context.cluster && !this.running) return Promise.reject(new ActorUnavailable(this.name));
    return this.heartbeatBatch.add(args);
  }

  /** Starts the actor's thread (and wires it to the supervisor); one that fails is started again later. */
  start(): Promise<void> {
    return this.thread.start();
  }

  /** Gives a supervisor started again a channel to this group's running actor. */
  async connectSupervisor(): Promise<void> {
    const api = this.thread.api;
    if (api) await this.context.connect(api, this.group, this.deleting);
  }

  async reconfigure(group: NodeGroup): Promise<void> {
    // A thread that dies meanwhile is started again from this spec, so its death changes nothing.
    this.group = group;
    await this.context.supervisor()?.reconfigure(group);
    try {
      await this.call('reconfigure', group);
    } catch (err) {
      if (!(err instanceof ActorUnavailable)) throw err;
    }
  }

  /** For tests of crash recovery: ends the thread as a crash would (its restart held until `holdRestartUntil`). */
  crash(holdRestartUntil?: Promise<unknown>): Promise<void> {
    return this.thread.crash(holdRestartUntil);
  }

  /** No more restarts, and a start under way gives up: the group is being stopped or removed. */
  close(): void {
    this.closed = true;
    this.thread.close();
  }

  async stop(): Promise<void> {
    this.close();
    await this.thread.end(async (api) => api?.close());
  }

  /** Cluster mode: this instance acquired the group at `epoch`: its actor loads, fences the log, serves. */
  async activate(epoch: number): Promise<void> {
    this.epoch = epoch;
    this.closed = false;
    this.thread.reopen();
    await this.start();
  }

  /**
   * Cluster mode: the group is no longer this instance's. Calls go elsewhere at once; the actor
   * finishes the commits it has, and its thread ends (it may be started again, at a later epoch).
   */
  async deactivate(): Promise<void> {
    this.epoch = null;
    this.thread.forgetRestarts();
    await this.thread.end(async (api) => {
      await this.context
        .supervisor()
        ?.detachGroup(this.name)
        .catch(() => {});
      await api?.close();
    });
  }
}
