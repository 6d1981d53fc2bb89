// A node group's replicated log, as its actor uses it in cluster mode (docs/cluster.md). One
// JetStream subject per group (sy.wal.<group> in SY_WAL) holds one entry per commit: the writes
// of that commit, appended and acknowledged by a majority of NATS servers *before* the actor's
// LMDB transaction, so that an acknowledged write survives the loss of this instance.
//
// The fence is the subject's tail: every append says which sequence it follows (compare-and-set),
// and a new owner first appends an epoch record. From then on a stale owner's appends fail: its
// next commit is refused, it stops, and nothing it decided after losing the group lands. Each
// append carries a message id, so that the retry of an append whose acknowledgement was lost (a
// NATS server died under it) is recognised as a duplicate instead of landing twice.
//
// LMDB stays the local copy: `wal:<group>` in its meta database says up to which sequence it holds
// the log, written in the same transaction as what it applied. Taking a group over replays only
// what the local copy lacks.
import { DeliverPolicy } from '@nats-io/jetstream';
import { pack, unpack } from 'msgpackr';
import type { Database } from 'lmdb';
import type { GroupKey, Store } from '../store/store.js';
import { StoreUnavailable } from '../store/failures.js';
import { connectNats, isConflict, jet, JS_TIMEOUT_MS, STREAMS, walSubject, type Jet } from './nats.js';

/** A write as the group actor's model decides it (actors/group/model.ts `Write`), kept structural here. */
export interface LogWrite {
  kind: 'node' | 'binding' | 'provision';
  key: string;
  value: unknown;
}

type Entry = { t: 'w'; e: number; w: LogWrite[] } | { t: 'epoch'; e: number; o: string };

/** Another instance took the group: this actor must stop and never write again. */
export class Fenced extends Error {
  constructor(
    readonly group: string,
    detail: string,
  ) {
    super(`node group '${group}' was taken over by another instance: ${detail}`);
    this.name = 'Fenced';
  }
}

/** How long one append may keep retrying while JetStream has no leader, before the commit is refused. */
const APPEND_DEADLINE_MS = 1500;
const appliedKey = (group: string) => `wal:${group}`;

/** Puts what `writes` say into the group's records (inside a store write). */
export function applyWrites(store: Store, group: string, writes: readonly LogWrite[]): void {
  for (const w of writes) {
    const db = (w.kind === 'node' ? store.nodes : w.kind === 'binding' ? store.bindings : store.provisions) as Database<unknown, GroupKey>;
    if (w.value === null) db.remove([group, w.key]);
    else db.put([group, w.key], w.value);
  }
}

export function appliedOf(store: Store, group: string): number {
  return (store.meta.get(appliedKey(group)) as number | undefined) ?? 0;
}

export function markApplied(store: Store, group: string, seq: number): void {
  store.meta.put(appliedKey(group), seq);
}

interface Queued {
  writes: readonly LogWrite[];
  resolve(at: { seq: number; prev: number; last: boolean }): void;
  reject(err: unknown): void;
}

export class GroupLog {
  /** The last sequence of this group's subject that this actor knows of (its own, once fenced). */
  private tail = 0;
  /** An append failed or was not confirmed: no more until `resync` says where the log stands. */
  private broken = false;
  private queue: Queued[] = [];
  private sending = false;
  private counter = 0;

  private constructor(
    private readonly j: Jet,
    private readonly group: string,
    private readonly instance: string,
    private readonly epoch: number,
  ) {}

  static async open(servers: readonly string[], group: string, instance: string, epoch: number): Promise<GroupLog> {
    const nc = await connectNats(servers, `${instance}:group:${group}`);
    return new GroupLog(await jet(nc), group, instance, epoch);
  }

  get subject(): string {
    return walSubject(this.group);
  }

  /** Whether an append would be refused at once (the log is away, or its state unknown). */
  get refusing(): boolean {
    return this.broken || this.j.nc.isClosed() || this.j.nc.isDraining() || !this.connected;
  }

  private connected = true;

  /** The connection to NATS is up (JetStream may still have no leader). */
  get reachable(): boolean {
    return this.connected && !this.j.nc.isClosed();
  }

  /** Follows the connection's state: while it is down, commits are refused at once instead of waiting. */
  watchConnection(): void {
    void (async () => {
      for await (const s of this.j.nc.status()) {
        if (s.type === 'disconnect' || s.type === 'reconnecting') this.connected = false;
        else if (s.type === 'reconnect') this.connected = true;
      }
    })().catch(() => {});
  }

  /** The subject's last sequence, from the stream's leader (0: empty). */
  private async lastSeq(): Promise<number> {
    const m = await this.j.jsm.streams.getMessage(STREAMS.wal, { last_by_subj: this.subject });
    return m?.seq ?? 0;
  }

  /**
   * Applies to the local store every entry it lacks, up to the tail: answers how many, and whether
   * any came from another epoch than this actor's after `since` (someone else owned the group).
   */
  async catchUp(store: Store, since = Infinity): Promise<{ applied: number; foreign: boolean }> {
    const target = await this.lastSeq();
    let from = appliedOf(store, this.group);
    // The local copy is of a log that is gone (the group was deleted, and made again under its
    // name): it is forgotten, and the log replayed from its start.
    if (from > target) {
      await this.forgetLocal(store);
      from = 0;
    }
    let applied = 0;
    let foreign = false;
    while (from < target) {
      const consumer = await this.j.js.consumers.get(STREAMS.wal, { filter_subjects: this.subject, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: from + 1 });
      const batch: Array<{ seq: number; entry: Entry }> = [];
      const messages = await consumer.fetch({ max_messages: 1000, expires: 2000 });
      for await (const m of messages) {
        batch.push({ seq: m.seq, entry: unpack(m.data) as Entry });
        if (m.seq >= target || m.info.pending === 0) break;
      }
      if (batch.length === 0) throw new StoreUnavailable(new Error(`the log of node group '${this.group}' did not deliver entries ${from + 1}–${target}`));
      const head = store.headOf(this.group);
      const written = store.write(
        () => {
          for (const { entry } of batch) if (entry.t === 'w') applyWrites(store, this.group, entry.w);
          markApplied(store, this.group, batch.at(-1)!.seq);
        },
        { group: this.group, head },
      );
      if (!(await written.durable)) throw new StoreUnavailable(new Error('the local store did not take the log entries'));
      for (const { seq, entry } of batch) if (seq > since && entry.e !== this.epoch) foreign = true;
      applied += batch.length;
      from = batch.at(-1)!.seq;
    }
    this.tail = Math.max(target, from);
    return { applied, foreign };
  }

  private async forgetLocal(store: Store): Promise<void> {
    const group = this.group;
    const written = store.write(
      () => {
        for (const db of [store.nodes, store.bindings, store.provisions] as Array<Database<unknown, GroupKey>>) {
          for (const key of db.getKeys({ start: [group, ''], end: [`${group}\u0000`, ''] })) db.remove(key as GroupKey);
        }
        markApplied(store, group, 0);
      },
      { group, head: store.headOf(group) },
    );
    if (!(await written.durable)) throw new StoreUnavailable(new Error('the local store did not take the reset of a node group'));
  }

  /**
   * Makes this actor the group's only writer: the local store catches up, then an epoch record
   * follows the tail it reached. A stale owner that appended meanwhile makes the record fail:
   * catch up with what it wrote (acknowledged to its clients) and try again.
   */
  async fence(store: Store): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      await this.catchUp(store);
      try {
        const prev = this.tail;
        this.tail = await this.publish({ t: 'epoch', e: this.epoch, o: this.instance }, prev);
        this.fencedAt = this.tail;
        const head = store.headOf(this.group);
        await store.write(() => markApplied(store, this.group, this.tail), { group: this.group, head }).durable;
        this.broken = false;
        return;
      } catch (err) {
        if (!(err instanceof Fenced) || attempt >= 5) throw err;
      }
    }
  }

  /**
   * After a refused or failed append: where the log stands. Our own entries whose answers were lost
   * are applied locally; an entry of another epoch means the group was taken over.
   */
  async resync(store: Store): Promise<number> {
    const { applied, foreign } = await this.catchUp(store, this.fencedAt);
    if (foreign) throw new Fenced(this.group, 'its log holds entries of a later owner');
    this.broken = false;
    return applied;
  }

  /** The sequence of this actor's epoch record: entries after it are its own, or a later owner's. */
  private fencedAt = Infinity;

  /**
   * Appends one commit's writes; resolves with the sequence of the entry that holds them (and the
   * one before it), once a majority of servers has it. Commits that queue while one is in flight
   * go together in the next entry (group commit). Throws StoreUnavailable at once while refusing.
   */
  append(writes: readonly LogWrite[]): Promise<{ seq: number; prev: number; last: boolean }> {
    if (this.refusing) throw new StoreUnavailable(new Error('the replicated log (NATS JetStream) is not reachable'));
    return new Promise((resolve, reject) => {
      this.queue.push({ writes, resolve, reject });
      void this.pump();
    });
  }

  private async pump(): Promise<void> {
    if (this.sending || this.queue.length === 0) return;
    this.sending = true;
    const batch = this.queue;
    this.queue = [];
    try {
      const prev = this.tail;
      const seq = await this.publish({ t: 'w', e: this.epoch, w: batch.flatMap((b) => b.writes) }, prev);
      this.tail = seq;
      batch.forEach((b, i) => {
        b.resolve({ seq, prev, last: i === batch.length - 1 });
      });
    } catch (err) {
      this.broken = true;
      const rest = this.queue;
      this.queue = [];
      for (const b of [...batch, ...rest]) b.reject(err);
    } finally {
      this.sending = false;
    }
    if (this.queue.length > 0) void this.pump();
  }

  /** One entry after `prev`, retried under the same id while JetStream has no leader. */
  private async publish(entry: Entry, prev: number): Promise<number> {
    const id = `${this.instance}.${this.epoch}.${++this.counter}`;
    const data = pack(entry);
    const deadline = Date.now() + APPEND_DEADLINE_MS;
    for (;;) {
      try {
        const ack = await this.j.js.publish(this.subject, data, { msgID: id, expect: { lastSubjectSequence: prev }, timeout: JS_TIMEOUT_MS });
        return ack.seq;
      } catch (err) {
        if (isConflict(err)) throw new Fenced(this.group, `the log moved past ${prev}`);
        if (Date.now() + 250 > deadline) throw new StoreUnavailable(err instanceof Error ? err : new Error(String(err)));
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }

  async close(): Promise<void> {
    await this.j.nc.close().catch(() => {});
  }
}
