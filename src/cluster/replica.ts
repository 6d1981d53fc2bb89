// An instance's local copy of a node group's replicated log (docs/cluster.md): the group's records
// in LMDB, and `wal:<group>` saying up to which log sequence they hold it (src/store/store.ts). The
// owner's actor brings it level with the log before it fences (wal.ts); a warm standby keeps it
// level all along (standby.ts). Both go through the one algorithm of
// src/policy/cluster/snapshot.ts (`catchUp`), which this implements the port of: entries read from
// SY_WAL, snapshots from SY_SNAP (snapshots.ts), writes to LMDB.
import { DeliverPolicy } from '@nats-io/jetstream';
import { unpack } from 'msgpackr';
import type { EventBody } from '../domain/events.js';
import type { Logged, ReplicaPort, SnapshotRef } from '../policy/cluster/snapshot.js';
import { StoreUnavailable } from '../store/failures.js';
import { appliedOf, clearGroup, markApplied, putGroupWrites, type GroupWrite, type Store } from '../store/store.js';
import { CONSUMER_IDLE_MS, STREAMS, walSubject, type Jet } from './nats.js';
import type { GroupSnapshots } from './snapshots.js';

/**
 * One entry of a group's log: the writes of one or more commits, or a new owner's epoch record.
 * `e`: the epoch of the owner that appended it; `p`: the sequence of the entry before it on the
 * subject (what the append's compare-and-set named), absent in entries written before snapshots
 * existed; `v`: each commit's events, in the entry's order (absent when none had any, and in
 * entries written before events were carried), for the next owner to publish again (republish.ts).
 */
export type Entry = { t: 'w'; e: number; p?: number; w: GroupWrite[]; v?: ReadonlyArray<readonly EventBody[]> } | { t: 'epoch'; e: number; o: string; p?: number };

/** Entries read per request: a batch is one LMDB transaction. */
const READ_BATCH = 2000;

/** The reading was stopped (a standby that must give way to the group's new owner on this instance). */
export class Stopped extends Error {
  constructor(group: string) {
    super(`following node group '${group}' was stopped`);
    this.name = 'Stopped';
  }
}

export class LocalCopy implements ReplicaPort<Entry> {
  constructor(
    private readonly j: Jet,
    private readonly store: Store,
    private readonly group: string,
    private readonly snapshots: GroupSnapshots,
    private readonly o: { stopped?: () => boolean; seen?: (entries: ReadonlyArray<Logged<Entry>>) => void } = {},
  ) {}

  private get subject(): string {
    return walSubject(this.group);
  }

  async tail(): Promise<number> {
    const m = await this.j.jsm.streams.getMessage(STREAMS.wal, { last_by_subj: this.subject });
    return m?.seq ?? 0;
  }

  applied(): number {
    return appliedOf(this.store, this.group);
  }

  /** A fresh consumer from `from + 1` for each batch: a consumer left with messages undelivered would skip them next time. */
  async read(from: number, to: number): Promise<Array<Logged<Entry>>> {
    if (this.o.stopped?.()) throw new Stopped(this.group);
    const consumer = await this.j.js.consumers.get(STREAMS.wal, {
      filter_subjects: this.subject,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: from + 1,
      inactive_threshold: CONSUMER_IDLE_MS,
    });
    const batch: Array<Logged<Entry>> = [];
    const messages = await consumer.fetch({ max_messages: READ_BATCH, expires: 2000 });
    for await (const m of messages) {
      const entry = unpack(m.data) as Entry;
      batch.push({ seq: m.seq, p: entry.p, entry });
      if (m.seq >= to || m.info.pending === 0) break;
    }
    return batch;
  }

  async apply(entries: Array<Logged<Entry>>): Promise<void> {
    this.o.seen?.(entries);
    const { store, group } = this;
    const written = store.write(
      () => {
        for (const { entry } of entries) if (entry.t === 'w') putGroupWrites(store, group, entry.w);
        markApplied(store, group, entries.at(-1)!.seq);
      },
      { group, head: store.headOf(group) },
    );
    if (!(await written.durable)) throw new StoreUnavailable(new Error('the local store did not take the log entries'));
  }

  snapshot(): Promise<SnapshotRef | null> {
    return this.snapshots.published();
  }

  restore(snap: SnapshotRef): Promise<boolean> {
    return this.snapshots.restore(this.store, snap, this.o.stopped);
  }

  async reset(): Promise<void> {
    const { store, group } = this;
    const written = store.write(
      () => {
        clearGroup(store, group);
        markApplied(store, group, 0);
      },
      { group, head: store.headOf(group) },
    );
    if (!(await written.durable)) throw new StoreUnavailable(new Error('the local store did not take the reset of a node group'));
  }
}
