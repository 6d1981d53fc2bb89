// The write path of a node-group actor (actor.ts holds its calls): the model with the store under
// it. Each call's writes go to the store as one commit (commits.ts); their events go out once the
// commit is durable, in order; answers show only what is durable (answerOnceDurable, writesInFlightFor). A refused or
// failed commit reloads the model from the store before any call decides again. Cluster mode: the
// local store catches up with the group's replicated log in the background after a failed append,
// and a later owner's entries there mean the group was taken over (the host is told).
import type { MessagePort } from 'node:worker_threads';
import type { Store } from '../../src/store/store.js';
import { type Commits, ALREADY_DURABLE, type Settled, type Submitted } from './commits.js';
import type { EventBatch, EventBody } from '../../src/domain/events.js';
import { FENCED_EVENT } from './signals.js';
import type { GroupLog } from '../../src/cluster/wal.js';
import type { Failure } from '../../src/domain/failure.js';
import type { GroupModel } from '../../src/model/group-model.js';
import type { Effects } from '../../src/model/effects.js';
import { BindingLoader, loadModel } from './loading.js';

/** What a group actor's calls share (the model, the store, the commits in flight) and its write path; GroupActor (actor.ts) adds the calls. */
export class DurableGroup {
  /** The group's name, from the start (the model comes later). */
  protected name = '';
  protected model!: GroupModel;
  protected store!: Store;
  /** Cluster mode: the group's replicated log (src/cluster/wal.ts). */
  protected log: GroupLog | null = null;
  /** Cluster mode: another instance took the group over; nothing more is written. */
  protected fenced = false;
  protected commits!: Commits;
  protected events!: MessagePort;
  /** Commits are failing (disk full, read-only): refused until one succeeds again. */
  protected failing = false;
  /** Why the last commit was refused, for the answer to the request that asked for it. */
  protected refusal = 'the data store refused the write';
  /** After a refused or failed commit: settles once memory is what the store holds again. */
  protected reloading: Promise<void> | null = null;
  /** Answers decided and held until what they show (or write) is durable. */
  protected waiting = 0;
  /** The model's bindings, loading in the background (loading.ts). */
  protected loader!: BindingLoader;

  /** Closing: no more background work on the store. */
  protected closing = false;

  /**
   * Hands the effects' writes to the store as one commit (commits.ts) and says how it ended: the
   * promises never reject, and a failure is handled here. The effects' events go out once their
   * writes are durable, in order, and not at all if they are refused.
   */
  protected submit(effects: Effects, names?: readonly string[]): Settled {
    if (effects.writes.length === 0) {
      this.post(effects.events, ALREADY_DURABLE);
      return { committed: ALREADY_DURABLE, durable: ALREADY_DURABLE };
    }
    this.loader.written(effects.writes);
    let submitted: Submitted;
    try {
      submitted = this.commits.submit(effects.writes, names, effects.events);
    } catch (err) {
      // The guard refused: nothing was handed over, but memory already holds these effects.
      this.failed(err);
      const refused = Promise.resolve(false);
      return { committed: refused, durable: refused };
    }
    this.post(effects.events, submitted.durable, submitted.key);
    return submitted;
  }

  /** Submits; resolves once committed (with `acknowledge`, once durable as configured): whether it landed. */
  protected commit(effects: Effects, acknowledge: boolean, names?: readonly string[]): Promise<boolean> {
    const settled = this.submit(effects, names);
    return acknowledge ? settled.durable : settled.committed;
  }

  /** Settles when the events of the last commit are out: later ones wait, so the log keeps their order. */
  protected posted: Promise<void> = Promise.resolve();

  /** Posts the events once `durable` says the commit landed; `key` names its log entry (cluster mode, EventBatch). */
  protected post(events: EventBody[], durable: Promise<boolean>, key?: Promise<string>): void {
    if (events.length === 0) return;
    this.posted = this.posted
      .then(() => durable)
      .then(async (ok) => {
        if (ok) this.events.postMessage({ events, ...(key ? { key: await key } : {}) } satisfies EventBatch);
      })
      .catch(() => {});
  }

  protected landed(): void {
    if (this.failing) {
      this.failing = false;
      this.emit([{ type: 'store.recovered', group: this.model.name }]);
    }
  }

  /**
   * A commit was refused or failed (`err`), or its fence stopped it (null: it followed one that
   * failed, or a predecessor's late commit overtook it). Memory must not claim what the disk does
   * not hold: once every commit handed over has settled, the model starts again from the store.
   * Calls wait for that; calls that decided before it are answered 503 by their own commit.
   */
  protected failed(err: unknown): void {
    const group = this.model.name;
    if (err) {
      this.refusal = (err as Error).message;
      // The answer and the event say why in general terms; the log keeps the store's own words
      // (once per outage, as the event).
      if (!this.failing) console.error(`node group '${group}': a data store write failed:`, (err as { cause?: unknown }).cause ?? err);
      if (!this.failing) this.emit([{ type: 'store.unavailable', group, message: (err as Error).message }]);
      this.failing = true;
    } else if (!this.failing) {
      this.refusal = 'an earlier write of this node group did not land';
    }
    this.reloading ??= this.commits.settled().then(() => {
      // Cluster mode: memory reloads from the local store (a prefix of the log) at once; what the
      // log holds beyond it is looked into in the background (syncLog).
      if (this.log) this.syncLog();
      this.loader.stop();
      this.model = loadModel(this.store, this.model.group);
      this.commits.reset();
      this.loader = new BindingLoader(this.store, this.model);
      this.reloading = null;
    });
  }

  protected syncing = false;

  /**
   * Cluster mode, after a failed or refused append: brings the local store level with the log, in
   * the background (reads go on from the store meanwhile, and appends are refused until it is
   * done). Our own entries whose answers were lost are applied, and reload the model; a later
   * owner's entries mean the group was taken over: the host is told, and stops this actor.
   */
  protected syncLog(): void {
    if (this.syncing || this.fenced || this.closing) return;
    this.syncing = true;
    const attempt = async (): Promise<void> => {
      if (this.closing || this.fenced) return void (this.syncing = false);
      try {
        const applied = await this.log!.resync(this.store);
        this.syncing = false;
        if (applied > 0) this.failed(null);
      } catch (err) {
        if ((err as Error).name !== 'Fenced') return void setTimeout(() => void attempt(), 250).unref();
        this.syncing = false;
        this.takenOver(err as Error);
      }
    };
    void attempt();
  }

  /** Cluster mode: another instance took the group over (its log, or its snapshots, say so): the host is told, and stops this actor. */
  protected takenOver(err: Error): void {
    if (this.fenced) return;
    this.fenced = true;
    this.emit([{ type: FENCED_EVENT, group: this.name, reason: err.message } as unknown as EventBody]);
  }

  /** Resolves when no reload is under way: what every call that decides waits for first (`if (this.reloading)`, to cost nothing otherwise). */
  protected async settle(): Promise<void> {
    while (this.reloading) await this.reloading;
  }

  /**
   * Reads now, and answers once what it read is durable: `writeInFlight` gives the commit in
   * flight that wrote it, if any. If that commit fails, reads again once memory is the store's again.
   */
  protected async answerOnceDurable<T>(read: () => T, writeInFlight: () => Promise<boolean> | undefined): Promise<T> {
    for (;;) {
      if (this.reloading) await this.settle();
      const value = read();
      const writer = writeInFlight();
      if (!writer) return value;
      this.waiting += 1;
      try {
        if (await writer) return value;
      } finally {
        this.waiting -= 1;
      }
    }
  }

  /**
   * The commits in flight that write what a lookup of `name` reads (the binding and provision of its
   * stream, and its own name's: a rendition), as one durability; undefined when none is.
   */
  protected writesInFlightFor(name: string): Promise<boolean> | undefined {
    const stream = this.model.streamOf(name);
    const own = this.commits.pending(name);
    const its = stream === name ? undefined : this.commits.pending(stream);
    return own && its ? Promise.all([own, its]).then(([a, b]) => a && b) : (own ?? its);
  }

  protected refused(): Failure {
    // Cluster mode: an append the log did not confirm may still have landed (a leader elected
    // meanwhile); a retried lookup or read shows whether it did.
    if (this.log && /replicated log/.test(this.refusal)) return { ok: false, status: 503, code: 'STORE_UNAVAILABLE', detail: `${this.refusal}; it may yet land: retry (reads go on)`, retryAfter: 2 };
    return { ok: false, status: 503, code: 'STORE_UNAVAILABLE', detail: `${this.refusal}; nothing was changed, reads go on`, retryAfter: 5 };
  }

  protected emit(events: EventBody[]): void {
    this.events.postMessage({ events } satisfies EventBatch);
  }
}
