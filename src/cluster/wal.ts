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
// LMDB stays the local copy (replica.ts): `wal:<group>` in its meta database says up to which
// sequence it holds the log, written in the same transaction as what it applied. Taking a group
// over replays only what the local copy lacks, from the group's latest snapshot when the log was
// compacted past it (snapshots.ts). The owner snapshots its group every so many entries (or so
// long) and purges the log below the snapshot: the log holds the entries of one interval, not the
// group's whole history.
import { AckPolicy, DeliverPolicy } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { pack } from 'msgpackr';
import { catchUp, due, Gap, type Logged, type Manifest, type SnapshotSettings } from '../policy/cluster/snapshot.js';
import type { EventBatch, EventBody } from '../domain/events.js';
import { markApplied, type GroupWrite, type Store } from '../store/store.js';
import { StoreUnavailable } from '../store/failures.js';
import { BUCKETS, CONSUMER_IDLE_MS, connectNats, isConflict, jet, JS_TIMEOUT_MS, STREAMS, walSubject, type Jet } from './nats.js';
import { LocalCopy, type Entry } from './replica.js';
import { eventsBefore } from './republish.js';
import { GroupSnapshots, SnapshotRefused } from './snapshots.js';

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
/** After a snapshot failed (NATS away, no leader), the next attempt waits this long. */
const SNAPSHOT_RETRY_MS = 10_000;

export interface SnapshotStats {
  taken: number;
  failed: number;
  /** Entries appended since the last snapshot (as far as this actor counted). */
  since: number;
  last: { seq: number; records: number; bytes: number; ms: number; at: number } | null;
}

interface Queued {
  writes: readonly GroupWrite[];
  events: readonly EventBody[];
  resolve(at: { seq: number; prev: number; last: boolean; index: number }): void;
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
  /** Set by `fence`: the local copy snapshots are taken from. */
  private store: Store | null = null;
  private snapshotting: Promise<void> | null = null;
  private lastSnapshotAt = Date.now();
  private nextSnapshotTry = 0;
  private closing = false;
  readonly snapshotStats: SnapshotStats = { taken: 0, failed: 0, since: 0, last: null };
  /** Called when a snapshot found the group claimed by a later owner: this actor must stop. */
  onFenced: ((err: Fenced) => void) | null = null;

  private constructor(
    private readonly j: Jet,
    private readonly group: string,
    private readonly instance: string,
    private readonly epoch: number,
    private readonly snapshots: GroupSnapshots,
    private readonly settings: SnapshotSettings,
  ) {}

  static async open(servers: readonly string[], group: string, instance: string, epoch: number, settings: SnapshotSettings): Promise<GroupLog> {
    const nc = await connectNats(servers, `${instance}:group:${group}`);
    const j = await jet(nc);
    const snapshots = new GroupSnapshots(j, await j.kvm.open(BUCKETS.snapshots), group, await j.kvm.open(BUCKETS.instances));
    return new GroupLog(j, group, instance, epoch, snapshots, settings);
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

  /**
   * Applies to the local store every entry it lacks, up to the tail (from the group's snapshot
   * where the log was compacted past what it holds): answers how many, and whether any came from
   * another epoch than this actor's after `since` (someone else owned the group). Reading back
   * after its own fence (`since` finite), a gap means a later owner compacted the log: Fenced.
   */
  async catchUp(store: Store, since = Infinity): Promise<{ applied: number; foreign: boolean }> {
    let foreign = false;
    const seen = (entries: ReadonlyArray<Logged<Entry>>) => {
      for (const { seq, entry } of entries) if (seq > since && entry.e !== this.epoch) foreign = true;
    };
    try {
      const r = await catchUp(new LocalCopy(this.j, store, this.group, this.snapshots, { seen }), { restore: since === Infinity });
      this.tail = r.applied;
      return { applied: r.entries, foreign };
    } catch (err) {
      if (err instanceof Gap) throw new Fenced(this.group, err.message);
      throw err;
    }
  }

  /**
   * Makes this actor the group's only writer: the local store catches up, the group's snapshots
   * are claimed at the tail it reached (no owner before it may publish one from then on), then an
   * epoch record follows that tail. A stale owner that appended meanwhile makes the record fail:
   * catch up with what it wrote (acknowledged to its clients) and try again.
   */
  async fence(store: Store): Promise<void> {
    this.store = store;
    let manifest: Manifest | null = null;
    for (let attempt = 0; ; attempt++) {
      await this.catchUp(store);
      try {
        const prev = this.tail;
        manifest = await this.snapshots.claim(prev);
        this.tail = await this.publish({ t: 'epoch', e: this.epoch, o: this.instance, p: prev }, prev);
        this.fencedAt = this.tail;
        const head = store.headOf(this.group);
        await store.write(() => markApplied(store, this.group, this.tail), { group: this.group, head }).durable;
        this.broken = false;
        break;
      } catch (err) {
        // Another owner appended, or claimed beyond our tail: the log moved on; catch up again.
        const moved = err instanceof Fenced || (err instanceof SnapshotRefused && !err.stale);
        if (!moved || attempt >= 5) throw err instanceof SnapshotRefused ? new Fenced(this.group, err.message) : err;
      }
    }
    // What the log holds since the published snapshot, counted in the background: a long history is compacted at once.
    void this.countSince(manifest?.snap?.seq ?? 0);
  }

  /** The entries after `seq` on the subject, as a consumer from there counts them pending (the stream's per-subject counts are not always in its answers). */
  private async countSince(seq: number): Promise<void> {
    try {
      const ci = await this.j.jsm.consumers.add(STREAMS.wal, {
        filter_subject: this.subject,
        deliver_policy: DeliverPolicy.StartSequence,
        opt_start_seq: seq + 1,
        ack_policy: AckPolicy.None,
        mem_storage: true,
        num_replicas: 1,
        inactive_threshold: nanos(CONSUMER_IDLE_MS),
      });
      void this.j.jsm.consumers.delete(STREAMS.wal, ci.name).catch(() => {});
      this.snapshotStats.since += ci.num_pending;
    } catch {
      /* counted from here on */
    }
    this.maybeSnapshot();
  }

  /**
   * After a refused or failed append: where the log stands. Our own entries whose answers were lost
   * are applied locally; an entry of another epoch (or a gap: the log compacted by another) means
   * the group was taken over.
   */
  async resync(store: Store): Promise<number> {
    const { applied, foreign } = await this.catchUp(store, this.fencedAt);
    if (foreign) throw new Fenced(this.group, 'its log holds entries of a later owner');
    this.broken = false;
    return applied;
  }

  /**
   * Once fenced: the events of the commits appended shortly before this owner's epoch record, for
   * it to hand out again before its own (republish.ts: its predecessor may have died before it
   * published them; those it did publish are dropped as duplicates).
   */
  eventsBeforeFence(): Promise<EventBatch[]> {
    return Number.isFinite(this.fencedAt) ? eventsBefore(this.j, this.group, this.fencedAt) : Promise.resolve([]);
  }

  /** The sequence of this actor's epoch record: entries after it are its own, or a later owner's. */
  private fencedAt = Infinity;

  /**
   * Appends one commit's writes and events; resolves with the sequence of the entry that holds them
   * (and the one before it, and the commit's place in it), once a majority of servers has it.
   * Commits that queue while one is in flight go together in the next entry (group commit). Throws
   * StoreUnavailable at once while refusing.
   */
  append(writes: readonly GroupWrite[], events: readonly EventBody[] = []): Promise<{ seq: number; prev: number; last: boolean; index: number }> {
    if (this.refusing) throw new StoreUnavailable(new Error('the replicated log (NATS JetStream) is not reachable'));
    return new Promise((resolve, reject) => {
      this.queue.push({ writes, events, resolve, reject });
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
      const entry: Entry = { t: 'w', e: this.epoch, p: prev, w: batch.flatMap((b) => b.writes) };
      if (batch.some((b) => b.events.length > 0)) entry.v = batch.map((b) => b.events);
      const seq = await this.publish(entry, prev);
      this.tail = seq;
      batch.forEach((b, i) => {
        b.resolve({ seq, prev, last: i === batch.length - 1, index: i });
      });
      this.snapshotStats.since += 1;
      this.maybeSnapshot();
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

  /** Starts a snapshot in the background when one is due (entries or time since the last), one at a time. */
  private maybeSnapshot(): void {
    const now = Date.now();
    if (!this.store || this.snapshotting || this.broken || this.closing || now < this.nextSnapshotTry) return;
    if (!due({ entries: this.snapshotStats.since, ms: now - this.lastSnapshotAt }, this.settings)) return;
    this.snapshotting = this.snapshot(this.store).finally(() => {
      this.snapshotting = null;
    });
  }

  private async snapshot(store: Store): Promise<void> {
    const counted = this.snapshotStats.since;
    try {
      const taken = await this.snapshots.take(store, this.fencedAt, this.epoch, () => this.closing);
      // Entries appended while it was written are after it (or applied only after its read began): they count towards the next.
      this.snapshotStats.since = Math.max(0, this.snapshotStats.since - counted);
      this.lastSnapshotAt = Date.now();
      if (!taken) return;
      this.snapshotStats.taken += 1;
      this.snapshotStats.last = { seq: taken.ref.seq, records: taken.ref.records, bytes: taken.ref.bytes, ms: Math.round(taken.ms), at: taken.ref.at };
    } catch (err) {
      if (err instanceof SnapshotRefused && err.stale) {
        this.broken = true;
        this.onFenced?.(new Fenced(this.group, err.message));
        return;
      }
      if (this.closing) return;
      this.snapshotStats.failed += 1;
      this.nextSnapshotTry = Date.now() + SNAPSHOT_RETRY_MS;
      console.warn(`node group '${this.group}': a snapshot failed, tried again in ${SNAPSHOT_RETRY_MS / 1000} s:`, (err as Error).message);
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    // A snapshot under way holds a read transaction on the store: it stops at its next chunk.
    await this.snapshotting;
    await this.j.nc.close().catch(() => {});
  }
}
