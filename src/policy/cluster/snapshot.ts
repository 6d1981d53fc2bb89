// Snapshots of a node group's replicated log (docs/cluster.md), as pure rules and one algorithm
// over a port: no sockets here. src/cluster/snapshots.ts keeps the snapshots in JetStream,
// src/cluster/replica.ts is the local copy the algorithm brings level with the log.
//
// A group's log (`sy.wal.<group>`) is compacted: its owner writes every record of the group as
// its local copy holds them at a log sequence S (a snapshot), publishes it, and only then purges
// the subject below S. So every entry a purge removes is covered by a published snapshot, and a
// reader that finds a gap in the log finds a snapshot past it.
//
// The log's own fence is its tail: an owner's epoch record follows the tail it caught up to, and
// from then on only that owner's appends (which name the tail they follow) land. Snapshots follow
// the same fence, by log sequence. The manifest (one per group) names the published snapshot and
// a fence: the tail the latest owner caught up to before its epoch record. A new owner claims the
// manifest at that tail *before* it appends its record, and an owner may publish only if its own
// epoch record lies beyond the manifest's fence, by compare-and-set on the manifest it read. So
// once a new owner's epoch record is in the log, an earlier owner can neither append (the tail
// moved) nor publish a snapshot (its record is at or below the fence), and a snapshot behind the
// published one never replaces it: the published sequence only grows. Log sequences, not lease
// epochs, order the owners here: they only grow while SY_WAL exists, whatever becomes of the
// lease bucket.
//
// A reader knows a gap when it sees one: each entry names the sequence of the entry before it on
// the subject (`p`), which the append's compare-and-set on the tail makes true. An entry whose `p`
// is not the sequence the reader holds means entries between were purged: the reader takes the
// published snapshot (replacing its copy) and reads on from there. It never applies an entry
// across a gap.

/** A published snapshot: the group's records at log sequence `seq`, in `chunks` messages from `first`. */
export interface SnapshotRef {
  /** Names its chunks (several snapshots' chunks may be interleaved in the stream). */
  id: string;
  /** The log sequence it covers: every entry up to it, nothing after. */
  seq: number;
  /** The epoch of the owner that wrote it. */
  epoch: number;
  /** The stream sequence of its first chunk (0: no chunks, a group with no records). */
  first: number;
  chunks: number;
  records: number;
  bytes: number;
  /** SHA-256 of the chunks, in order (base64). */
  digest: string;
  /** When it was published (ms since the epoch), for operators. */
  at: number;
}

/** The one value per group that says which snapshot is published and who may publish the next. */
export interface Manifest {
  /** The log tail the latest owner caught up to before its epoch record: only an owner whose record lies beyond it may publish. */
  fence: number;
  snap: SnapshotRef | null;
}

/** A manifest write decided: `next` to write (null: nothing to), or a refusal (`stale`: another owner's epoch record follows this one's). */
export type Decision = { ok: true; next: Manifest | null } | { ok: false; stale: boolean; reason: string };

/**
 * A new owner that caught up to `tail` claims the group's snapshots before it appends its epoch
 * record after that tail. Refused when another claimed beyond it (the log moved on since: catch
 * up again). `next` null: the manifest says so already.
 */
export function claim(m: Manifest | null, tail: number): Decision {
  if (m && m.fence > tail) return { ok: false, stale: false, reason: `another owner claimed the log after ${m.fence}, beyond ${tail}` };
  if (m && m.fence === tail) return { ok: true, next: null };
  return { ok: true, next: { fence: tail, snap: m?.snap ?? null } };
}

/** Whether an owner whose epoch record is at `record` may publish `snap` over the manifest it read (then written by compare-and-set on that read). */
export function publish(m: Manifest | null, snap: SnapshotRef, record: number): Decision {
  if (stale(m, record)) return { ok: false, stale: true, reason: `a later owner claimed the log after ${m?.fence}, beyond this owner's epoch record at ${record}` };
  if (m?.snap && snap.seq <= m.snap.seq) return { ok: false, stale: false, reason: `a snapshot at ${m.snap.seq} is published already` };
  return { ok: true, next: { fence: m?.fence ?? 0, snap } };
}

/** Whether the owner whose epoch record is at `record` was taken over (a later owner claimed the log after it). */
export function stale(m: Manifest | null, record: number): boolean {
  return !!m && m.fence >= record;
}

/**
 * What a purge after publishing `snap` may remove: every entry of the subject below its sequence.
 * The entry at `seq` stays, so that the subject is never empty (the tail compare-and-set of the
 * next append names it) and the purge never reaches past what the snapshot covers.
 */
export function purgeBelow(snap: SnapshotRef): number {
  return snap.seq;
}

/**
 * Whether an entry that names `p` as the one before it follows `last`, the sequence the reader
 * holds, with nothing missing between. An entry without `p` was written before snapshots existed:
 * no purge has ever passed it (the first snapshot follows the first epoch record that has one).
 */
export function follows(last: number, p: number | undefined): boolean {
  return p === undefined || p === last;
}

export interface SnapshotSettings {
  /** Snapshot once this many entries were appended since the last one. */
  entries: number;
  /** And at the first append once this long has passed since the last one (ms). */
  intervalMs: number;
}

/** Whether the owner should snapshot now: `entries` appended since the last one, `ms` since it. */
export function due(since: { entries: number; ms: number }, s: SnapshotSettings): boolean {
  return since.entries >= s.entries || (since.entries > 0 && since.ms >= s.intervalMs);
}

// ---- reading a log that is compacted ------------------------------------------------------------

/** One entry of the log as read: its stream sequence and the sequence it names before it. */
export interface Logged<E> {
  seq: number;
  p?: number | undefined;
  entry: E;
}

/** What bringing a local copy level with the log needs (src/cluster/replica.ts; a simulated one in tests). */
export interface ReplicaPort<E> {
  /** The subject's last sequence now (0: nothing). */
  tail(): Promise<number>;
  /** Up to which sequence the local copy holds the log. */
  applied(): number;
  /** The next entries after `from`, in order, at most up to `to`; none only if they did not come. */
  read(from: number, to: number): Promise<Array<Logged<E>>>;
  /** Applies the entries to the local copy, in order, and marks the last one applied. */
  apply(entries: Array<Logged<E>>): Promise<void>;
  /** The published snapshot, if any. */
  snapshot(): Promise<SnapshotRef | null>;
  /** Replaces the local copy by the snapshot, marked applied at its sequence; false if it is gone (a newer one replaced it meanwhile). */
  restore(snap: SnapshotRef): Promise<boolean>;
  /** Forgets the local copy: the log it copied is gone. */
  reset(): Promise<void>;
}

/** Entries between `after` and `next` were purged: thrown when the caller must not take a snapshot (an owner reading back its own log). */
export class Gap extends Error {
  constructor(
    readonly after: number,
    readonly next: number,
  ) {
    super(`the log was compacted past ${after} (the next entry is ${next})`);
    this.name = 'Gap';
  }
}

export interface CaughtUp {
  /** Entries applied. */
  entries: number;
  /** Snapshots taken in their place. */
  restored: number;
  /** Up to where the local copy holds the log now. */
  applied: number;
}

/** How many entries of `batch` follow `from` and each other with nothing missing. */
function linked<E>(from: number, batch: ReadonlyArray<Logged<E>>): number {
  let last = from;
  for (const [i, l] of batch.entries()) {
    if (!follows(last, l.p)) return i;
    last = l.seq;
  }
  return batch.length;
}

/**
 * Brings the local copy level with the log's tail: entries after what it holds, in order, and the
 * published snapshot where entries it lacks were compacted away (`restore` false: a Gap is thrown
 * instead). The snapshot may move on while it is read (another one published, the log purged
 * further): the gap after it shows, and the newer one is taken, up to `attempts` times.
 */
export async function catchUp<E>(replica: ReplicaPort<E>, options: { restore: boolean; attempts?: number }): Promise<CaughtUp> {
  const attempts = options.attempts ?? 5;
  let entries = 0;
  let restored = 0;
  let target = await replica.tail();
  let from = replica.applied();
  // The copy is of a log that is gone (a group deleted, and made again under its name).
  if (from > target) {
    await replica.reset();
    from = replica.applied();
  }
  for (;;) {
    while (from < target) {
      const batch = await replica.read(from, target);
      if (batch.length === 0) throw new Error(`the log did not deliver entries after ${from} (up to ${target})`);
      const linkedCount = linked(from, batch);
      if (linkedCount > 0) {
        await replica.apply(batch.slice(0, linkedCount));
        entries += linkedCount;
        from = batch[linkedCount - 1]!.seq;
      }
      if (linkedCount === batch.length) continue;
      if (!options.restore) throw new Gap(from, batch[linkedCount]!.seq);
      if (restored >= attempts) throw new Error(`the log's snapshots moved on ${attempts} times while one was read`);
      const snap = await replica.snapshot();
      // Purges follow publication and the published sequence only grows: a gap no snapshot covers is a log that lost entries.
      if (!snap || snap.seq <= from) throw new Error(`the log has a gap after ${from} that no published snapshot covers`);
      restored += 1;
      await replica.restore(snap);
      // Gone meanwhile (or restored): go on from what the copy holds now; a gap shows again if need be.
      from = replica.applied();
    }
    // A snapshot may have taken the copy past the tail read at the start: read it again.
    if (restored === 0) break;
    const now = await replica.tail();
    if (now <= from) break;
    target = now;
  }
  return { entries, restored, applied: from };
}
