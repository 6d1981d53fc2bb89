// The NATS connection of a cluster-mode instance (docs/cluster.md), what JetStream keeps for the
// cluster, and how a failure is told apart: "unavailable" (no leader, a timeout, the connection
// down: nothing is known, retry) or "conflict" (a compare-and-set found another revision). Only
// cluster mode loads this file: the embedded default never loads NATS at all.
import { connect, nanos, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';

/** Requests to JetStream wait this long: a stream without a leader must not hold a caller for seconds. */
export const JS_TIMEOUT_MS = 500;

/** JetStream's error code for a compare-and-set that found another sequence ("wrong last sequence"). */
const WRONG_LAST_SEQUENCE = 10071;

export const BUCKETS = {
  /** One key per node group: its owner, renewed every third of the TTL (max_age = TTL). */
  leases: 'sy_leases',
  /** One key per live instance: its id and URLs, put every second (max_age = 3 s). */
  instances: 'sy_instances',
  /** Shared state by compare-and-set: the signing key, users, node groups, node token generations. */
  meta: 'sy_meta',
  /** Each Terraform node group's state (gzipped) and its lock, by compare-and-set (terraform-state.ts). */
  tfstate: 'sy_tfstate',
  /** Each node group's snapshot manifest: the published snapshot and the fence, by compare-and-set (snapshots.ts). */
  snapshots: 'sy_snap',
} as const;

export const STREAMS = {
  /** Each node group's log: one entry per commit of its actor, fenced by the tail (wal.ts). */
  wal: 'SY_WAL',
  /** The cluster's event log: ids are stream sequences (events.ts). */
  events: 'SY_EVENTS',
  /** Each node group's snapshots: the chunks of its records at a log sequence (snapshots.ts). */
  snapshots: 'SY_SNAP',
} as const;

/**
 * The consumers that read a group's log or snapshot go after this long unused (the client's default
 * keeps them five minutes: a catch-up that reads in batches would leave one per batch behind).
 */
export const CONSUMER_IDLE_MS = 10_000;

export const walSubject = (group: string) => `sy.wal.${group}`;
export const snapSubject = (group: string) => `sy.snap.${group}`;
export const rpcSubject = (group: string) => `sy.g.${group}.rpc`;
export const EVENTS_KEEP = 10_000;
/**
 * How long SY_EVENTS remembers an event's message id (the server's default, said here): a new
 * owner hands out again the events of the minute before it took over (republish.ts), and the
 * stream drops those it has already taken within this window.
 */
export const EVENTS_DUPLICATE_WINDOW_MS = 120_000;

export function connectNats(servers: readonly string[], name: string): Promise<NatsConnection> {
  return connect({
    servers: [...servers],
    name,
    // Never give up: an instance whose NATS is away serves what it can and waits for it (README).
    maxReconnectAttempts: -1,
    reconnectTimeWait: 100,
    reconnectJitter: 100,
    // A half-open connection is noticed within seconds, not the default's minutes.
    pingInterval: 1000,
    maxPingOut: 2,
    timeout: 2000,
    // The first connection fails fast, so that the start can say why it waits; later ones retry for ever.
    waitOnFirstConnect: false,
  });
}

export interface Jet {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  kvm: Kvm;
}

export async function jet(nc: NatsConnection): Promise<Jet> {
  const jsm = await jetstreamManager(nc, { timeout: JS_TIMEOUT_MS * 4 });
  const js = jetstream(nc, { timeout: JS_TIMEOUT_MS });
  // Buckets on the same short timeout: a bucket without a leader must not hold a renewal for 5 s.
  return { nc, jsm, js, kvm: new Kvm(js) };
}

export interface Buckets {
  leases: KV;
  instances: KV;
  meta: KV;
  tfstate: KV;
  snapshots: KV;
}

/**
 * Creates (or opens: creating what exists with the same settings is a no-op) the buckets and
 * streams. `replicas` 3 keeps them on three servers: an acknowledged write survives the loss of one.
 */
export async function provision(j: Jet, replicas: number, leaseTtlMs: number): Promise<Buckets> {
  // Lease reads must come from the leader (read-your-writes): no direct gets on followers.
  const leases = await j.kvm.create(BUCKETS.leases, { history: 1, ttl: leaseTtlMs, replicas, allow_direct: false, timeout: JS_TIMEOUT_MS * 4 } as never);
  const instances = await j.kvm.create(BUCKETS.instances, { history: 1, ttl: 3000, replicas, timeout: JS_TIMEOUT_MS * 4 } as never);
  const meta = await j.kvm.create(BUCKETS.meta, { history: 5, replicas, allow_direct: false, timeout: JS_TIMEOUT_MS * 4 } as never);
  // Read from the leader too: a new owner's Terraform must see its predecessor's last state write.
  const tfstate = await j.kvm.create(BUCKETS.tfstate, { history: 1, replicas, allow_direct: false, timeout: JS_TIMEOUT_MS * 4 } as never);
  // Manifests from the leader too: a compare-and-set must start from the last write.
  const snapshots = await j.kvm.create(BUCKETS.snapshots, { history: 1, replicas, allow_direct: false, timeout: JS_TIMEOUT_MS * 4 } as never);
  await ensureStream(j, { name: STREAMS.wal, subjects: ['sy.wal.>'], num_replicas: replicas, duplicate_window: nanos(120_000) });
  await ensureStream(j, { name: STREAMS.events, subjects: ['sy.ev.>'], num_replicas: replicas, max_msgs: EVENTS_KEEP, duplicate_window: nanos(EVENTS_DUPLICATE_WINDOW_MS) });
  await ensureStream(j, { name: STREAMS.snapshots, subjects: ['sy.snap.>'], num_replicas: replicas });
  return { leases, instances, meta, tfstate, snapshots };
}

async function ensureStream(j: Jet, config: { name: string; subjects: string[]; num_replicas: number; max_msgs?: number; duplicate_window?: number }): Promise<void> {
  try {
    await j.jsm.streams.info(config.name);
  } catch (err) {
    if (!/not found/i.test((err as Error).message)) throw err;
    try {
      await j.jsm.streams.add(config as never);
    } catch (e) {
      // Another instance created it meanwhile.
      if (!/already in use|exists/i.test((e as Error).message)) throw e;
    }
  }
}

/** A compare-and-set that found another revision (a key that exists, a tail that moved). */
export function isConflict(err: unknown): boolean {
  const e = err as { code?: number; message?: string; apiError?: () => { err_code?: number } };
  if (e?.code === WRONG_LAST_SEQUENCE) return true;
  try {
    if (e?.apiError?.().err_code === WRONG_LAST_SEQUENCE) return true;
  } catch {
    /* not an API error */
  }
  return /wrong last sequence/i.test(e?.message ?? '');
}

/** Retries `fn` while it fails as unavailable, until `deadline` (ms, Date.now()): conflicts and the deadline end it. */
export async function retrying<T>(fn: () => Promise<T>, deadline: number, everyMs = 250): Promise<T> {
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (isConflict(err) || Date.now() + everyMs > deadline) throw err;
      await new Promise((r) => setTimeout(r, everyMs));
    }
  }
}
