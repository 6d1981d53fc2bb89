// Reading a node group's lease key as its owner does after a renewal conflicted or a cut ended
// (ownership.ts): ours (at which revision), someone else's, gone, or no answer
// (src/policy/cluster/lease.ts `KeyRead`).
import type { KV } from '@nats-io/kv';
import type { KeyRead } from '../policy/cluster/lease.js';

export async function readLease(leases: KV, group: string, me: string): Promise<KeyRead> {
  try {
    const e = await leases.get(group);
    if (e?.operation !== 'PUT') return { kind: 'absent' };
    const v = e.json<{ owner: string }>();
    return v.owner === me ? { kind: 'ours', revision: e.revision } : { kind: 'theirs', owner: v.owner };
  } catch {
    return { kind: 'unavailable' };
  }
}
