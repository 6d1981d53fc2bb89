// A group actor's commits, from the moment it hands them to LMDB until they are durable.
//
// Each commit is one fenced block (Fence, src/store/store.ts): it lands only if every earlier
// commit of the group did, so the store always holds a prefix of what the actor decided, and a
// commit that follows a failed one writes nothing. Until a commit is durable, what it wrote is
// only in the actor's memory, and an answer that shows it (a lookup that finds the binding, a
// read of the provision) must wait for it (README.md, Reliability). So this remembers, per stream
// or rendition name, the last commit in flight that wrote its binding or provision: readers of
// that name wait for that one commit, and readers of anything else wait for nothing.
import { markApplied, putGroupWrites, type Store, type Written } from '../../src/store/store.js';
import { commitKey, type EventBody } from '../../src/domain/events.js';
import type { Write } from '../../src/model/effects.js';

/** How a commit ended, as promises that never reject: true once it landed (and is durable), false if it failed or was stopped. */
export interface Settled {
  committed: Promise<boolean>;
  durable: Promise<boolean>;
}

/** The durability of a commit that needs none (it writes nothing): nothing to wait for. */
export const ALREADY_DURABLE: Promise<boolean> = Promise.resolve(true);

/** A group's replicated log as commits use it (src/cluster/wal.ts), so that this file does not load NATS. */
export interface ReplicatedLog {
  /** Resolves with the entry that holds the commit, the one before it, and the commit's place in it. */
  append(writes: readonly Write[], events: readonly EventBody[]): Promise<{ seq: number; prev: number; last: boolean; index: number }>;
}

/** A commit handed over: how it ends, and (cluster mode) the key of its events (EventBatch) once its entry is appended. */
export interface Submitted extends Settled {
  key?: Promise<string>;
}

export class Commits {
  /** Commits of this group handed to the store: the fence of the next. */
  private head: number;
  private readonly writing = new Map<string, Promise<boolean>>();
  /** Settles once every commit handed over has settled (durable, failed or stopped). */
  private tail: Promise<unknown> = Promise.resolve();
  /** The durability of the last commit handed over, while one is in flight. */
  private latest: Promise<boolean> | undefined;
  private inFlight = 0;

  constructor(
    private readonly store: Store,
    private readonly group: string,
    /** A commit failed (its error), or its fence stopped it (null): called once per commit. */
    private readonly onFailed: (err: unknown) => void,
    private readonly onLanded: () => void,
    /**
     * Cluster mode: the group's replicated log (src/cluster/wal.ts). Each commit is appended there,
     * fenced, before its LMDB transaction; it throws StoreUnavailable at once while the log is away.
     */
    private readonly log?: ReplicatedLog,
  ) {
    this.head = store.headOf(group);
  }

  /**
   * Hands the writes to the store as one fenced commit. `names` adds stream or rendition names the
   * commit changes besides those its writes are keyed by (a replaced ladder's old renditions).
   * In cluster mode the commit's `events` go into its log entry with the writes, so that the next
   * owner can publish them again should this one die before it does.
   * Throws StoreUnavailable, handing nothing over, while the disk guard refuses.
   */
  submit(writes: readonly Write[], names: readonly string[] = [], events: readonly EventBody[] = []): Submitted {
    const s = this.store;
    const group = this.group;
    const fence = { group, head: this.head };
    const put = (applied?: number) =>
      s.write(() => {
        putGroupWrites(s, group, writes);
        // How far the local copy holds the replicated log, in the same transaction.
        if (applied !== undefined) markApplied(s, group, applied);
      }, fence);
    let written: Written;
    let key: Promise<string> | undefined;
    if (!this.log) written = put();
    else {
      s.guard.check();
      // The entry first (a majority of NATS servers has it), then the local copy. An entry that
      // holds later commits too is marked applied only by the last of them: a crash between two
      // leaves the local copy one entry behind, and the entry is replayed, not skipped.
      const appended = this.log.append(writes, events);
      const local = appended.then(({ seq, prev, last }) => put(last ? seq : prev));
      local.catch(() => {});
      key = appended.then(({ seq, index }) => commitKey(group, seq, index));
      key.catch(() => {});
      written = { committed: local.then((w) => w.committed), durable: local.then((w) => w.durable) };
    }
    this.head += 1;
    let reported = false;
    const fail = (err: unknown): false => {
      if (!reported) this.onFailed(err);
      reported = true;
      return false;
    };
    const committed = written.committed.then((ok) => {
      if (!ok) return fail(null);
      this.onLanded();
      return true;
    }, fail);
    const durable = written.durable === written.committed ? committed : written.durable.then((ok) => ok, fail);

    const before = this.tail;
    this.tail = durable.then(() => before);
    this.latest = durable;
    this.inFlight += 1;
    const touched = [...names];
    for (const w of writes) {
      if (w.kind === 'binding') touched.push(w.key);
      else if (w.kind === 'provision') touched.push(w.key, ...(w.value?.streams.map((r) => r.name) ?? []));
    }
    for (const name of touched) this.writing.set(name, durable);
    void durable.then((ok) => {
      this.inFlight -= 1;
      if (this.inFlight === 0) this.latest = undefined;
      // A failed commit's names stay pending (false) until the actor has reloaded from the store.
      if (ok) for (const name of touched) if (this.writing.get(name) === durable) this.writing.delete(name);
    });
    return key ? { committed, durable, key } : { committed, durable };
  }

  /** No binding or provision write is in flight (the common case: nothing to look up). */
  get quiet(): boolean {
    return this.writing.size === 0;
  }

  /** The durability of the last commit in flight that wrote this name's binding or provision. */
  pending(name: string): Promise<boolean> | undefined {
    return this.writing.get(name);
  }

  /** The durability of the last commit handed over, while any is in flight: what a list of everything waits for. */
  last(): Promise<boolean> | undefined {
    return this.latest;
  }

  /** Settles once every commit handed over so far is durable, has failed or been stopped. */
  settled(): Promise<unknown> {
    return this.tail;
  }

  /** After the actor has reloaded from the store: the next commit follows the store's head, and nothing is pending. */
  reset(): void {
    this.head = this.store.headOf(this.group);
    this.writing.clear();
  }
}
