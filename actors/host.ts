// Starts the actors on worker threads and wires them together:
//   front end ──comlink──▶ group actor (one per node group, through its GroupHandle: group-handle.ts)
//   supervisor ──comlink (own MessageChannel)──▶ group actor
//   group actor, supervisor ──events port──▶ front end (event log, SSE, webhooks)
// This host lists the groups' handles, starts and stops them, starts the supervisor and gives it
// and each group actor a channel of their own (again after a restart). Every thread is a
// SupervisedWorker (supervised-worker.ts): restarted with backoff when it dies.
import { MessageChannel } from 'node:worker_threads';
import * as Comlink from 'comlink';
import type { NodeGroup } from '../src/config/types.js';
import type { EventBody } from '../src/domain/events.js';
import type { ClusterSeam, GroupContext } from './group-context.js';
import type { GroupApi } from './group/actor.js';
import { ActorUnavailable, GroupHandle } from './group-handle.js';
import { type PreloadedThreads, preloadThreads, Spares } from './spare.js';
import type { SupervisorApi, SupervisorInit } from './supervisor/actor.js';
import { SupervisedWorker, type Remote } from './supervised-worker.js';

export type { ClusterSeam };

export interface HostOptions {
  dataDir: string;
  cluster?: ClusterSeam;
  durability: 'commit' | 'flush';
  minFreeBytes?: number;
  /** Events to log; `key` names the replicated commit that carried them (EventBatch). */
  onEvents(events: EventBody[], key?: string): void;
  /** Seconds a call to an actor took, by method. */
  observe?(method: string, seconds: number): void;
  onError?(group: string, err: Error): void;
  /** The supervisor thread is back after it died (startSupervisor). */
  onSupervisorRestarted?(): void;
  /** Threads the service started first, to start the first group and the supervisor on (spare.ts). */
  preloaded?: PreloadedThreads;
}

export class ActorHost {
  /** The threads to start first, before the host itself can be made (spare.ts): pass them as `preloaded`. */
  static preload(cluster: boolean, onError: (err: Error) => void): PreloadedThreads {
    return preloadThreads(cluster, onError);
  }

  readonly groups = new Map<string, GroupHandle>();
  /** A loaded actor thread for the next group started here; in cluster mode, always one (spare.ts). */
  readonly spares: Spares | null;

  /** All a group's handle knows of the service (group-context.ts). */
  private readonly context: GroupContext;

  constructor(readonly options: HostOptions) {
    this.spares = options.preloaded?.group ?? (options.cluster ? new Spares((err) => options.onError?.('spare', err), true) : null);
    this.context = {
      dataDir: options.dataDir,
      durability: options.durability,
      ...(options.minFreeBytes !== undefined ? { minFreeBytes: options.minFreeBytes } : {}),
      ...(options.cluster ? { cluster: options.cluster } : {}),
      onEvents: (events, key) => options.onEvents(events, key),
      ...(options.observe ? { observe: options.observe } : {}),
      ...(options.onError ? { onError: options.onError } : {}),
      spare: async () => (await this.spares?.take()) ?? null,
      connect: (actor, group, deleting) => this.connect(actor, group, deleting),
      supervisor: () => this.supervisor,
    };
  }

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
    if (this.options.cluster) return this.listGroup(group);
    const handle = new GroupHandle(group, this.context);
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

  /** Cluster mode: listed, not started: its actor starts here when this instance acquires it (GroupHandle.activate). */
  async listGroup(group: NodeGroup): Promise<GroupHandle> {
    const existing = this.groups.get(group.name);
    if (existing) return existing;
    const handle = new GroupHandle(group, this.context);
    this.groups.set(group.name, handle);
    this.spares?.prepare();
    return handle;
  }

  /** Groups whose first start is under way: not listed yet, but stopped with the rest. */
  private readonly starting = new Set<GroupHandle>();
  /** Groups being removed: no longer listed, but stopped with the rest if the host stops first. */
  private readonly removing = new Set<GroupHandle>();
  private stopping = false;

  /**
   * Unlisted at once; the supervisor lets go of it, then its thread ends. A supervisor that is
   * gone (the host stopping: a drained group's removal can land just then) fails the detach
   * instead of wedging it, and the thread ends all the same.
   */
  async removeGroup(name: string): Promise<void> {
    const handle = this.groups.get(name);
    if (!handle) return;
    handle.close();
    this.groups.delete(name);
    this.removing.add(handle);
    try {
      await this.supervisor?.detachGroup(name).catch((err: Error) => {
        if (!(err instanceof ActorUnavailable)) throw err;
      });
    } finally {
      await handle.stop();
      this.removing.delete(handle);
    }
  }

  group(name: string): GroupHandle | undefined {
    return this.groups.get(name);
  }

  /**
   * Starts the supervisor thread and connects every running group to it. A thread that dies
   * outside a stop is started again with the same settings, backing off to 5 s: it rebuilds what
   * it knows from the groups' actors and the platforms (agents still running are adopted), as
   * after a restart of the service; meanwhile lookups and heartbeats go on, supervision waits.
   */
  async startSupervisor(init: Omit<SupervisorInit, 'events'>): Promise<void> {
    const options = this.options;
    this.supervisorThread = new SupervisedWorker<SupervisorApi>({
      name: 'supervisor',
      what: 'the supervisor',
      entry: new URL('./supervisor/actor.js', import.meta.url),
      adopt: async () => options.preloaded?.supervisor.take() ?? null,
      unavailable: () => new ActorUnavailable('supervisor'),
      init: (api, events) => api.start(Comlink.transfer({ ...init, events }, [events])),
      connect: async () => {
        // The host stopped while this one started (a restart): it must not outlive the host.
        if (this.stopping) throw new ActorUnavailable('supervisor');
        for (const handle of this.groups.values()) {
          // A group whose actor is restarting connects itself once it is back (GroupHandle.start).
          if (handle.running) await handle.connectSupervisor().catch((err: Error) => options.onError?.(handle.name, err));
        }
      },
      onEvents: ({ events }) => options.onEvents(events),
      // Said loudly: lookups go on, so nothing else would show that supervision paused.
      onDown: (reason, delay) => options.onError?.('supervisor', new Error(`${reason}: health checks, failover and scaling pause; starting it again in ${delay} ms`)),
      onRestarted: () => options.onSupervisorRestarted?.(),
      onError: (err) => options.onError?.('supervisor', err),
      mayRestart: () => !this.stopping,
    });
    try {
      await this.supervisorThread.start();
    } catch (err) {
      // The first start's failure is the caller's; no restart is left behind it.
      this.supervisorThread.close();
      throw err;
    }
  }

  private supervisorThread: SupervisedWorker<SupervisorApi> | null = null;

  /** The supervisor, while its thread runs. */
  get supervisor(): Remote<SupervisorApi> | null {
    return this.supervisorThread?.api ?? null;
  }

  /** Gives the supervisor and a group actor a channel of their own (again, after a restart). */
  private async connect(actor: Remote<GroupApi>, group: NodeGroup, deleting: boolean): Promise<void> {
    const supervisor = this.supervisor;
    if (!supervisor) return;
    const channel = new MessageChannel();
    await actor.attachSupervisor(Comlink.transfer(channel.port2, [channel.port2]));
    // A group deleted while its thread was down is still being retired by the one that follows.
    await supervisor.attachGroup(group, Comlink.transfer(channel.port1, [channel.port1]), deleting);
  }

  async stop(stopNodes: boolean): Promise<void> {
    this.stopping = true;
    const supervisor = this.supervisorThread;
    supervisor?.close();
    await supervisor?.end((api) => (api ? api.stop(stopNodes).catch((err: Error) => this.options.onError?.('supervisor', err)) : Promise.resolve()));
    await Promise.all([...this.groups.values(), ...this.starting, ...this.removing].map((g) => g.stop()));
    await this.spares?.close();
    await this.options.preloaded?.supervisor.close();
  }

  /** For tests of a supervisor crash: ends its thread as a crash would. */
  async crashSupervisor(): Promise<void> {
    await this.supervisorThread?.crash();
  }
}
