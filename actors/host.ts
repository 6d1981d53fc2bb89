// Starts the actors on worker threads and wires them together:
//   front end ──comlink──▶ group actor (one per node group, through its GroupHandle: group-handle.ts)
//   supervisor ──comlink (own MessageChannel)──▶ group actor
//   group actor, supervisor ──events port──▶ front end (event log, SSE, capacity requests)
// This host lists the groups' handles, starts and stops them, starts the supervisor and gives it
// and each group actor a channel of their own (again after a restart).
import { MessageChannel, Worker } from 'node:worker_threads';
import * as Comlink from 'comlink';
import type { NodeGroup } from '../src/config/types.js';
import type { EventBody } from '../src/domain/events.js';
import { guardedRemote, InFlight, nodeEndpoint } from './comlink.js';
import { ActorUnavailable, GroupHandle } from './group-handle.js';
import { Spares } from './spare.js';
import type { SupervisorApi, SupervisorInit } from './supervisor/actor.js';

/**
 * Cluster mode (src/cluster/runtime.ts): a group's actor runs only on the instance that owns the
 * group; every other instance forwards its calls there. Absent in the embedded default.
 */
export interface ClusterSeam {
  servers: string[];
  instance: string;
  /** When an owner snapshots its group's log (entries since the last, or time: ms). */
  snapshot: { entries: number; intervalMs: number };
  /** This instance holds the group's lease and may answer for it now (checked on every call). */
  serving(group: string): boolean;
  /** Whether some instance is known to own the group (its lease is held). */
  owned(group: string): boolean;
  /** The call, made by the group's owner; rejects with an error named ActorUnavailable or NotServedHere when none answers in time. */
  forward(group: string, method: string, args: unknown[]): Promise<unknown>;
  /** The actor found its group taken over (its log holds a later owner's entries). */
  fenced(group: string): void;
}

export interface HostOptions {
  dataDir: string;
  cluster?: ClusterSeam;
  durability: 'commit' | 'flush';
  minFreeBytes?: number;
  onEvents(events: EventBody[]): void;
  /** Seconds a call to an actor took, by method. */
  observe?(method: string, seconds: number): void;
  onError?(group: string, err: Error): void;
  /** The supervisor thread is back after it died (startSupervisor). */
  onSupervisorRestarted?(): void;
}

export class ActorHost {
  readonly groups = new Map<string, GroupHandle>();
  supervisor: ReturnType<typeof guardedRemote<SupervisorApi>> | null = null;
  private supervisorWorker: Worker | null = null;
  /** Cluster mode: a loaded actor thread, for the next group acquired here (spare.ts). */
  readonly spares: Spares | null;

  constructor(readonly options: HostOptions) {
    this.spares = options.cluster ? new Spares((err) => options.onError?.('spare', err)) : null;
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

  /** Cluster mode: listed, not started: its actor starts here when this instance acquires it (GroupHandle.activate). */
  async listGroup(group: NodeGroup): Promise<GroupHandle> {
    const existing = this.groups.get(group.name);
    if (existing) return existing;
    const handle = new GroupHandle(group, this);
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
    this.supervisorInit = init;
    const worker = new Worker(new URL('./supervisor/actor.js', import.meta.url), { name: 'supervisor' });
    worker.on('error', (err) => this.options.onError?.('supervisor', err));
    // Calls to a supervisor whose thread ended fail rather than never settle (actors/comlink.ts).
    const inFlight = new InFlight();
    const events = new MessageChannel();
    worker.once('exit', (code) => {
      inFlight.fail(new ActorUnavailable('supervisor'));
      events.port1.close();
      if (this.stopping || this.supervisorWorker !== worker) return;
      this.supervisor = null;
      this.supervisorWorker = null;
      this.restartSupervisor(`the supervisor thread exited (code ${code})`);
    });
    const api = guardedRemote<SupervisorApi>(nodeEndpoint(worker), inFlight);
    events.port1.on('message', (batch: EventBody[]) => this.options.onEvents(batch));
    try {
      await api.start(Comlink.transfer({ ...init, events: events.port2 }, [events.port2]));
      // The host stopped while this one started (a restart): it must not outlive the host.
      if (this.stopping) throw new ActorUnavailable('supervisor');
    } catch (err) {
      await worker.terminate();
      throw err;
    }
    this.supervisor = api;
    this.supervisorWorker = worker;
    for (const handle of this.groups.values()) {
      // A group whose actor is restarting connects itself once it is back (GroupHandle.start).
      if (handle.running) await this.connect(handle).catch((err: Error) => this.options.onError?.(handle.name, err));
    }
  }

  private supervisorInit: Omit<SupervisorInit, 'events'> | null = null;
  private supervisorRestarts = 0;
  private supervisorTimer: NodeJS.Timeout | null = null;

  private restartSupervisor(reason: string): void {
    const delay = Math.min(5000, 100 * 2 ** this.supervisorRestarts++);
    // Said loudly: lookups go on, so nothing else would show that supervision paused.
    this.options.onError?.('supervisor', new Error(`${reason}: health checks, failover and scaling pause; starting it again in ${delay} ms`));
    this.supervisorTimer = setTimeout(() => {
      this.supervisorTimer = null;
      if (this.stopping || !this.supervisorInit) return;
      this.startSupervisor(this.supervisorInit).then(
        () => {
          this.supervisorRestarts = 0;
          this.options.onSupervisorRestarted?.();
        },
        (err: Error) => {
          if (!this.stopping) this.restartSupervisor(`the supervisor did not start again: ${err.message}`);
        },
      );
    }, delay);
    this.supervisorTimer.unref();
  }

  /** Gives the supervisor and a group actor a channel of their own (again, after a restart). */
  async connect(handle: GroupHandle): Promise<void> {
    if (!this.supervisor) return;
    const channel = new MessageChannel();
    await handle.callHere('attachSupervisor', Comlink.transfer(channel.port2, [channel.port2]));
    // A group deleted while its thread was down is still being retired by the one that follows.
    await this.supervisor.attachGroup(handle.group, Comlink.transfer(channel.port1, [channel.port1]), handle.deleting, handle.kept);
  }

  async stop(stopNodes: boolean): Promise<void> {
    this.stopping = true;
    if (this.supervisorTimer) clearTimeout(this.supervisorTimer);
    if (this.supervisor) {
      await this.supervisor.stop(stopNodes).catch((err: Error) => this.options.onError?.('supervisor', err));
      await this.supervisorWorker?.terminate();
      this.supervisor = null;
    }
    await Promise.all([...this.groups.values(), ...this.starting, ...this.removing].map((g) => g.stop()));
    await this.spares?.close();
  }

  /** For tests of a supervisor crash: ends its thread as a crash would. */
  async crashSupervisor(): Promise<void> {
    await this.supervisorWorker?.terminate();
  }
}
