// A node group's replicated log (src/cluster/wal.ts) given a history before any instance starts,
// for the cluster bench's history axis: `count` entries appended straight to `sy.wal.<group>`, in
// pipelined batches (no lookups, no tail compare-and-set: nobody else writes yet). Each entry binds
// a stream, the next removes it: the group's live state stays empty whatever the history, so that
// what the bench measures against history is the log's length and nothing else. And what the log
// weighs: the stream's own count of the subject's messages and bytes, and its files on each server.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { pack } from 'msgpackr';
import type { NatsCluster } from '../../test/helpers/nats-cluster.js';

/** Entries published without waiting (core NATS publishes the stream takes in), between acknowledged ones. */
const BATCH = 5000;

/** Appends `count` entries to the group's log of a cluster no instance has started on; resolves with the rate (entries/s). */
export async function writeHistory(nats: NatsCluster, group: string, count: number): Promise<number> {
  if (count === 0) return 0;
  const nc = await connect({ servers: nats.urls() });
  try {
    const jsm = await jetstreamManager(nc);
    // The stream as the instances make it (src/cluster/nats.ts `provision`): they open it as it is.
    await jsm.streams.add({ name: 'SY_WAL', subjects: ['sy.wal.>'], num_replicas: nats.servers.length, duplicate_window: 120_000_000_000 } as never);
    const js = jetstream(nc, { timeout: 60_000 });
    const subject = `sy.wal.${group}`;
    const started = performance.now();
    const now = Date.now();
    const entry = (i: number) => {
      const stream = `history-${i >> 1}`;
      const value = i % 2 === 0 ? { stream, origin: 'history-origin', state: 'PENDING', boundAt: now, since: now } : null;
      // `p`: the entry before it on the subject. The stream holds nothing else, so entry i is
      // stream sequence i + 1 and follows sequence i (the acknowledged ones check it).
      return pack({ t: 'w', e: 0, p: i, w: [{ kind: 'binding', key: stream, value }] });
    };
    for (let i = 0; i < count; ) {
      const end = Math.min(count, i + BATCH);
      // A batch goes out on one connection, in order, without acknowledgements; its last entry is
      // published acknowledged: at the sequence it should have, every entry before it landed too.
      for (; i < end - 1; i++) nc.publish(subject, entry(i));
      const ack = await js.publish(subject, entry(i));
      if (ack.seq !== i + 1) throw new Error(`history entry ${i} landed at sequence ${ack.seq}, not ${i + 1}: entries were lost`);
      i++;
    }
    return Math.round(count / ((performance.now() - started) / 1000));
  } finally {
    await nc.close();
  }
}

export interface LogSize {
  /** Messages of SY_WAL (the bench's only group: the subject's). */
  messages: number;
  /** Bytes of SY_WAL (the bench's only group: the subject's). */
  bytes: number;
  /** Bytes of the group's snapshots (SY_SNAP), if the stream exists. */
  snapshotBytes: number;
  /** The largest SY_WAL directory on a server's disk (every server holds a copy). */
  onDisk: number;
}

function du(path: string): number {
  let total = 0;
  let entries: string[];
  try {
    entries = readdirSync(path);
  } catch {
    return 0;
  }
  for (const name of entries) {
    const p = join(path, name);
    const s = statSync(p, { throwIfNoEntry: false });
    if (!s) continue;
    total += s.isDirectory() ? du(p) : s.size;
  }
  return total;
}

export async function logSize(nats: NatsCluster): Promise<LogSize> {
  const nc = await connect({ servers: nats.urls() });
  try {
    const jsm = await jetstreamManager(nc);
    // No stream yet: no history was written and no instance has started.
    const wal = await jsm.streams.info('SY_WAL').catch(() => null);
    if (!wal) return { messages: 0, bytes: 0, snapshotBytes: 0, onDisk: 0 };
    const snapshotBytes = await jsm.streams.info('SY_SNAP').then(
      (s) => s.state.bytes,
      () => 0,
    );
    const onDisk = Math.max(...nats.servers.map((s) => du(join(s.storeDir, 'jetstream', '$G', 'streams', 'SY_WAL'))));
    // The bench's group is the stream's only subject (nats-server 2.9 leaves the per-subject counts out of some answers).
    return { messages: wal.state.messages, bytes: wal.state.bytes, snapshotBytes, onDisk };
  } finally {
    await nc.close();
  }
}
