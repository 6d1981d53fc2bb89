// A JetStream stream's backup and restore through the JetStream API, as `nats stream backup` and
// `nats stream restore` do it (the natscli is not installed here; nats.js 3.4 has no helper for
// it): a snapshot request names an inbox, the server sends the stream's snapshot (an s2-compressed
// tar) there in chunks, each acknowledged on its reply subject, then an empty message; a restore
// request with the stream's config and state answers a subject to send the chunks to, each as a
// request the server acknowledges, then an empty one, whose answer is the restored stream's info.
// docs/cluster.md ("Backups") says what to back up; test/cluster/restore.test.ts uses this.
import type { NatsConnection } from '@nats-io/transport-node';

export interface StreamBackup {
  name: string;
  config: Record<string, unknown>;
  state: Record<string, unknown>;
  chunks: Uint8Array[];
}

const encode = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const decode = <T>(data: Uint8Array) => JSON.parse(new TextDecoder().decode(data)) as T & { error?: { description: string } };

export async function backupStream(nc: NatsConnection, name: string): Promise<StreamBackup> {
  const inbox = `_INBOX.backup.${name}.${Date.now()}`;
  const chunks: Uint8Array[] = [];
  const sub = nc.subscribe(inbox);
  const received = (async () => {
    for await (const m of sub) {
      if (m.data.length === 0) {
        if (m.headers?.code && m.headers.code >= 400) throw new Error(`the snapshot of ${name} stopped: ${m.headers.code} ${m.headers.description}`);
        break;
      }
      chunks.push(m.data);
      if (m.reply) m.respond(new Uint8Array());
    }
  })();
  const r = decode<{ config: Record<string, unknown>; state: Record<string, unknown> }>(
    (await nc.request(`$JS.API.STREAM.SNAPSHOT.${name}`, encode({ deliver_subject: inbox, no_consumers: true, chunk_size: 128 * 1024 }), { timeout: 10_000 })).data,
  );
  if (r.error) throw new Error(`snapshot of ${name}: ${r.error.description}`);
  await received;
  sub.unsubscribe();
  return { name, config: r.config, state: r.state, chunks };
}

/** Restores a stream that does not exist (the cluster's JetStream data was lost). */
export async function restoreStream(nc: NatsConnection, b: StreamBackup): Promise<void> {
  const r = decode<{ deliver_subject: string }>((await nc.request(`$JS.API.STREAM.RESTORE.${b.name}`, encode({ config: b.config, state: b.state }), { timeout: 10_000 })).data);
  if (r.error) throw new Error(`restore of ${b.name}: ${r.error.description}`);
  for (const chunk of b.chunks) await nc.request(r.deliver_subject, chunk, { timeout: 10_000 });
  const done = decode<{ state?: { messages: number } }>((await nc.request(r.deliver_subject, new Uint8Array(), { timeout: 30_000 })).data);
  if (done.error) throw new Error(`restore of ${b.name}: ${done.error.description}`);
}
