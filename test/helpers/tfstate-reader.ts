// Reads (and, to play a dead owner, writes) a Terraform group's state and lock straight from
// JetStream (src/cluster/terraform-state.ts), as a cluster test checks what the state holds.
import { gunzipSync } from 'node:zlib';
import { connect } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { lockKey, stateKey } from '../../src/cluster/terraform-state.js';

export interface TfState {
  serial: number;
  resources?: Array<{ type: string; name: string; module?: string; instances: Array<{ index_key?: string }> }>;
}

async function withBucket<T>(servers: string[], fn: (kv: Awaited<ReturnType<Kvm['open']>>) => Promise<T>): Promise<T> {
  const nc = await connect({ servers });
  try {
    return await fn(await new Kvm(jetstream(nc)).open('sy_tfstate'));
  } finally {
    await nc.close();
  }
}

/** The group's state as Terraform stored it last; null when there is none. */
export function readTfState(servers: string[], group: string): Promise<TfState | null> {
  return withBucket(servers, async (kv) => {
    const e = await kv.get(stateKey(group));
    if (e?.operation !== 'PUT' || e.value.length === 0) return null;
    return JSON.parse(gunzipSync(e.value).toString('utf8')) as TfState;
  });
}

/** The node ids of the `local` module's terraform_data resources in a state. */
export function nodesInTfState(state: TfState | null): string[] {
  return (state?.resources ?? [])
    .filter((r) => r.type === 'terraform_data')
    .flatMap((r) => r.instances.map((i) => String(i.index_key)))
    .sort();
}

/**
 * The lock held on a group's state, or null when none is: a released lock keeps its key with the
 * releasing owner's epoch (src/policy/cluster/terraform-lock.ts), and holds nothing.
 */
export function readTfLock(servers: string[], group: string): Promise<{ id: string; instance: string; epoch: number } | null> {
  return withBucket(servers, async (kv) => {
    const e = await kv.get(lockKey(group));
    const lock = e?.operation === 'PUT' ? e.json<{ id: string; instance: string; epoch: number; released?: true }>() : null;
    return lock && !lock.released ? lock : null;
  });
}

/** Leaves a lock as an owner that died in the middle of an apply would have. */
export function putTfLock(servers: string[], group: string, lock: { id: string; instance: string; epoch: number }): Promise<void> {
  return withBucket(servers, async (kv) => {
    await kv.put(lockKey(group), JSON.stringify({ ...lock, at: new Date().toISOString(), info: { ID: lock.id, Operation: 'OperationTypeApply', Who: 'dead@owner' } }));
  });
}
