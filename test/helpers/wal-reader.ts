// Reads a node group's replicated log straight from JetStream (src/cluster/wal.ts), as a test
// checks the fence: which epochs appended what, in order.
import { connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, DeliverPolicy } from '@nats-io/jetstream';
import { unpack } from 'msgpackr';

export interface LoggedEntry {
  seq: number;
  type: 'w' | 'epoch';
  epoch: number;
  owner?: string;
  writes: number;
}

export async function readLog(servers: string[], group: string): Promise<LoggedEntry[]> {
  const nc = await connect({ servers });
  try {
    const jsm = await jetstreamManager(nc);
    const last = (await jsm.streams.getMessage('SY_WAL', { last_by_subj: `sy.wal.${group}` }))?.seq ?? 0;
    const out: LoggedEntry[] = [];
    if (last === 0) return out;
    const consumer = await jetstream(nc).consumers.get('SY_WAL', { filter_subjects: `sy.wal.${group}`, deliver_policy: DeliverPolicy.All });
    while (out.length === 0 || out.at(-1)!.seq < last) {
      const messages = await consumer.fetch({ max_messages: 1000, expires: 2000 });
      let got = 0;
      for await (const m of messages) {
        got++;
        const e = unpack(m.data) as { t: 'w' | 'epoch'; e: number; o?: string; w?: unknown[] };
        out.push({ seq: m.seq, type: e.t, epoch: e.e, ...(e.o ? { owner: e.o } : {}), writes: e.w?.length ?? 0 });
        if (m.seq >= last) break;
      }
      if (got === 0) break;
    }
    return out;
  } finally {
    await nc.close();
  }
}
