// A node group's snapshots in JetStream (docs/cluster.md), after the rules of
// src/policy/cluster/snapshot.ts. Two places:
// - the manifest, a key per group in the KV bucket `sy_snap`: which snapshot is published and the
//   fence (the latest owner's epoch). It is small and written only by compare-and-set on the
//   revision read, which is what makes the fence hold;
// - the body, the group's records as msgpack, in chunks of at most 256 KiB on the subject
//   `sy.snap.<group>` of the stream SY_SNAP, each chunk named by its snapshot's id and index. A KV
//   value could not hold it (a message carries 1 MiB unless the servers say otherwise; a group of a
//   million bindings is a hundred times that), and the object store (which chunks the same way)
//   is one more dependency with no room in its metadata for the fence.
// The body is written first, read from one LMDB read transaction (every record of the group, of
// every kind the store keeps for groups, as of one log sequence), then the manifest names it, then
// the log below it and older bodies are purged.
import { createHash, randomBytes } from 'node:crypto';
import { DeliverPolicy } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { headers } from '@nats-io/transport-node';
import { pack, unpackMultiple } from 'msgpackr';
import { claim, publish, purgeBelow, stale, type Decision, type Manifest, type SnapshotRef } from '../policy/cluster/snapshot.js';
import { StoreUnavailable } from '../store/failures.js';
import { appliedOf, clearGroup, GROUP_RECORD_KINDS, groupTable, markApplied, putGroupWrites, type GroupKey, type GroupWrite, type Store } from '../store/store.js';
import { CONSUMER_IDLE_MS, isConflict, JS_TIMEOUT_MS, snapSubject, STREAMS, walSubject, type Jet } from './nats.js';

/**
 * What an instance that reads snapshots says in its presence record (`sy_instances`, `caps`). An
 * instance of an earlier version would replay a compacted log from where its copy stands and miss
 * what was purged: while one is live (a rolling upgrade), snapshots are published but the log is
 * not purged.
 */
export const COMPACTS_LOGS = 'snapshots';

/** A chunk's header: `<snapshot id> <index>`. */
const CHUNK_HEADER = 'Sy-Snapshot';
const CHUNK_BYTES = 256 * 1024;
/** Chunks in flight at once while a body is written. */
const WINDOW = 8;
/** How long a manifest write keeps retrying while its bucket has no leader. */
const MANIFEST_DEADLINE_MS = 5000;

/** The manifest refused a claim or a publication: `stale` when a later owner claimed the log. */
export class SnapshotRefused extends Error {
  constructor(
    readonly group: string,
    readonly stale: boolean,
    reason: string,
  ) {
    super(`node group '${group}': ${reason}`);
    this.name = 'SnapshotRefused';
  }
}

export interface Taken {
  ref: SnapshotRef;
  /** How long writing and publishing took (ms). */
  ms: number;
  /** Whether the log below it was purged (not while an instance of an earlier version is live). */
  purged: boolean;
}

export class GroupSnapshots {
  constructor(
    private readonly j: Jet,
    private readonly kv: KV,
    readonly group: string,
    /** The live instances' presence records (`sy_instances`): purges wait until every one reads snapshots. */
    private readonly instances?: KV,
  ) {}

  /** The manifest as stored now (from the bucket's leader), and its revision (0: none yet). */
  async read(): Promise<{ manifest: Manifest | null; revision: number }> {
    const e = await this.kv.get(this.group);
    if (e?.operation !== 'PUT') return { manifest: null, revision: e?.revision ?? 0 };
    return { manifest: e.json<Manifest>(), revision: e.revision };
  }

  async published(): Promise<SnapshotRef | null> {
    return (await this.read()).manifest?.snap ?? null;
  }

  /**
   * Writes what `decide` makes of the manifest, by compare-and-set on the revision it read: after
   * a conflict (another write landed between) it reads and decides again. Retried while the bucket
   * answers nothing (no leader), for a few seconds. Throws SnapshotRefused when `decide` refuses.
   */
  private async update(decide: (m: Manifest | null) => Decision): Promise<Manifest | null> {
    const deadline = Date.now() + MANIFEST_DEADLINE_MS;
    for (let conflicts = 0; ; ) {
      try {
        const { manifest, revision } = await this.read();
        const d = decide(manifest);
        if (!d.ok) throw new SnapshotRefused(this.group, d.stale, d.reason);
        if (d.next === null) return manifest;
        const value = new TextEncoder().encode(JSON.stringify(d.next));
        if (revision === 0) await this.kv.create(this.group, value);
        else await this.kv.update(this.group, value, revision, JS_TIMEOUT_MS);
        return d.next;
      } catch (err) {
        if (err instanceof SnapshotRefused) throw err;
        // Someone wrote between our read and our write: read and decide again.
        if (isConflict(err) && ++conflicts < 20) continue;
        // No leader, or NATS away: nothing is known; again, for a while.
        if (Date.now() + 250 > deadline) throw new StoreUnavailable(err instanceof Error ? err : new Error(String(err)));
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }

  /** A new owner that caught up to `tail` claims the group's snapshots before its epoch record follows that tail (SnapshotRefused if another claimed beyond it). */
  claim(tail: number): Promise<Manifest | null> {
    return this.update((m) => claim(m, tail));
  }

  /**
   * Snapshots the group as the local store holds it, for the owner whose epoch record is at
   * `record` (its lease epoch `epoch` is kept for operators): the body, then the manifest, then
   * the purges. Null when there is nothing newer than the published one. Throws SnapshotRefused
   * (stale: a later owner claimed the log), or what NATS or the store threw.
   */
  async take(store: Store, record: number, epoch: number, stop: () => boolean = () => false): Promise<Taken | null> {
    const started = performance.now();
    const { manifest } = await this.read();
    if (stale(manifest, record)) throw new SnapshotRefused(this.group, true, `a later owner claimed the log after ${manifest?.fence}`);
    const txn = store.root.useReadTransaction();
    let ref: SnapshotRef;
    try {
      const seq = appliedOf(store, this.group, { transaction: txn });
      if (seq === 0 || (manifest?.snap && manifest.snap.seq >= seq)) return null;
      ref = await this.writeBody(store, txn, seq, epoch, stop);
    } finally {
      txn.done();
    }
    await this.update((m) => publish(m, ref, record));
    // Published: what it covers may go. A purge that fails (or waits for an instance of an earlier
    // version to leave) is done by the next snapshot's.
    const purged = await this.everyoneReadsSnapshots();
    if (purged) await this.j.jsm.streams.purge(STREAMS.wal, { filter: walSubject(this.group), seq: purgeBelow(ref) }).catch(() => {});
    if (ref.chunks > 0) await this.j.jsm.streams.purge(STREAMS.snapshots, { filter: snapSubject(this.group), seq: ref.first }).catch(() => {});
    return { ref, ms: performance.now() - started, purged };
  }

  /** Whether every live instance says it reads snapshots (an instance of an earlier version would miss what a purge removes). */
  private async everyoneReadsSnapshots(): Promise<boolean> {
    if (!this.instances) return true;
    try {
      for await (const id of await this.instances.keys()) {
        const e = await this.instances.get(id);
        if (e?.operation === 'PUT' && !(e.json<{ caps?: string[] }>().caps ?? []).includes(COMPACTS_LOGS)) return false;
      }
      return true;
    } catch {
      return false;
    }
  }

  /** Every record of the group in the read transaction `txn`, as chunks on the group's snapshot subject. */
  private async writeBody(store: Store, txn: ReturnType<Store['root']['useReadTransaction']>, seq: number, epoch: number, stop: () => boolean): Promise<SnapshotRef> {
    const id = `${epoch}-${seq}-${randomBytes(3).toString('hex')}`;
    const subject = snapSubject(this.group);
    const limit = Math.min(CHUNK_BYTES, (this.j.nc.info?.max_payload ?? 1 << 20) - 16 * 1024);
    const sha = createHash('sha256');
    let parts: Buffer[] = [];
    let size = 0;
    let index = 0;
    let records = 0;
    let bytes = 0;
    let first = 0;
    const inFlight: Array<Promise<void>> = [];
    const send = async (): Promise<void> => {
      const chunk = Buffer.concat(parts, size);
      parts = [];
      size = 0;
      sha.update(chunk);
      bytes += chunk.length;
      const i = index++;
      const h = headers();
      h.set(CHUNK_HEADER, `${id} ${i}`);
      inFlight.push(
        this.j.js.publish(subject, chunk, { headers: h, timeout: JS_TIMEOUT_MS * 4 }).then((ack) => {
          if (i === 0) first = ack.seq;
        }),
      );
      if (inFlight.length >= WINDOW) await inFlight.shift();
    };
    try {
      for (const kind of GROUP_RECORD_KINDS) {
        for (const { key, value } of groupTable(store, kind).getRange({ start: [this.group, ''], end: [`${this.group}\u0000`, ''], transaction: txn })) {
          const b = pack([kind, (key as GroupKey)[1], value]);
          parts.push(b);
          size += b.length;
          records += 1;
          if (size >= limit) {
            await send();
            if (stop()) throw new Error('the snapshot was stopped (its actor is closing)');
          }
        }
      }
      if (size > 0) await send();
    } finally {
      // Every chunk is in (or one failed: the body is never named, the next publication purges it).
      await Promise.all(inFlight);
    }
    return { id, seq, epoch, first, chunks: index, records, bytes, digest: sha.digest('base64'), at: Date.now() };
  }

  /**
   * Replaces the group's records in the local store by the snapshot's, marked applied at its
   * sequence. False when the body is gone (a newer snapshot's purge took it while it was read):
   * the copy is then empty and marked at 0, and the caller reads the newer one. `stop` ends it
   * early (false as well).
   */
  async restore(store: Store, ref: SnapshotRef, stop: () => boolean = () => false): Promise<boolean> {
    const group = this.group;
    let head = store.headOf(group);
    const written: Array<Promise<boolean>> = [];
    const write = (fn: () => void) => {
      written.push(store.write(fn, { group, head }).durable);
      head += 1;
    };
    const landed = async () => {
      if (!(await Promise.all(written)).every(Boolean)) throw new StoreUnavailable(new Error('the local store did not take a snapshot'));
    };
    /** The body is gone (or the read stopped): what was written lands, the copy stays empty and marked at 0. */
    const gone = async () => {
      await landed();
      return false;
    };
    write(() => {
      clearGroup(store, group);
      markApplied(store, group, 0);
    });
    const sha = createHash('sha256');
    let next = 0;
    let records = 0;
    let from = ref.first;
    while (next < ref.chunks) {
      if (stop()) return gone();
      const consumer = await this.j.js.consumers.get(STREAMS.snapshots, {
        filter_subjects: snapSubject(group),
        deliver_policy: DeliverPolicy.StartSequence,
        opt_start_seq: from,
        inactive_threshold: CONSUMER_IDLE_MS,
      });
      const messages = await consumer.fetch({ max_messages: 64, expires: 2000 });
      let got = 0;
      for await (const m of messages) {
        got += 1;
        from = m.seq + 1;
        const [id, index] = (m.headers?.get(CHUNK_HEADER) ?? '').split(' ');
        if (id !== ref.id) continue;
        // A chunk missing (purged), or the first one not where the manifest says: gone.
        if (Number(index) !== next || (next === 0 && m.seq !== ref.first)) return gone();
        sha.update(m.data);
        next += 1;
        const writes: GroupWrite[] = [];
        unpackMultiple(m.data, (r: [GroupWrite['kind'], string, unknown]) => {
          writes.push({ kind: r[0], key: r[1], value: r[2] });
        });
        records += writes.length;
        write(() => putGroupWrites(store, group, writes));
        if (next === ref.chunks || m.info.pending === 0) break;
      }
      // Nothing more came: the rest of the body was purged meanwhile.
      if (got === 0) return gone();
    }
    if (ref.chunks > 0 && (sha.digest('base64') !== ref.digest || records !== ref.records)) {
      await landed();
      throw new Error(`node group '${group}': the snapshot at ${ref.seq} does not match its manifest (digest or record count)`);
    }
    write(() => markApplied(store, group, ref.seq));
    await landed();
    return true;
  }

  /** A deleted group's snapshots go with it: the manifest, then every body. */
  async remove(): Promise<void> {
    await this.kv.purge(this.group);
    await this.j.jsm.streams.purge(STREAMS.snapshots, { filter: snapSubject(this.group) });
  }
}
