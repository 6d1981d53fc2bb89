// The lease bucket (`sy_leases`, docs/cluster.md) as the pure rules of src/policy/cluster/lease.ts
// read it: each request comes back as what it found (an Outcome, a KeyRead, a FirstSight), never
// as an exception. A compare-and-set that found another revision is a conflict; anything else
// that fails (no leader, which nats.js 3.4 reports as "jetstream is not enabled" when a publish
// finds no stream leader to take it; a timeout; the connection down) is "unavailable": nothing is
// known. The keys hold { owner, url, epoch | at }: who owns the group, and how to reach it.
import type { KV } from '@nats-io/kv';
import type { FirstSight, KeyRead, Outcome } from '../policy/cluster/lease.js';
import { readLease } from './lease-key.js';
import { isConflict, JS_TIMEOUT_MS } from './nats.js';

const encode = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

export class LeaseBucket {
  /** What the last failed request said (for the trail a loss logs). */
  lastError = '';

  constructor(
    readonly kv: KV,
    private readonly me: { id: string; url: string },
  ) {}

  /** Acquires the group's lease: only if no one holds it (absent, or deleted). The revision is the epoch. */
  create(group: string): Promise<Outcome> {
    return this.attempt(() => this.kv.create(group, encode({ owner: this.me.id, url: this.me.url, at: Date.now() })));
  }

  /** Renews it by compare-and-set on the revision last acknowledged. */
  renew(group: string, epoch: number, revision: number): Promise<Outcome> {
    return this.attempt(() => this.kv.update(group, encode({ owner: this.me.id, url: this.me.url, epoch }), revision, JS_TIMEOUT_MS));
  }

  /** Hands it back: a delete by compare-and-set, which watchers see at once. */
  async release(group: string, revision: number): Promise<void> {
    await this.kv.delete(group, { previousSeq: revision }).catch(() => {});
  }

  /** Who holds the key now (lease-key.ts). */
  read(group: string): Promise<KeyRead> {
    return readLease(this.kv, group, this.me.id);
  }

  /** A first look at a group's key: someone's PUT, a DEL marker (handed back), nothing; null when the bucket did not answer. */
  async sight(group: string): Promise<FirstSight | null> {
    try {
      const e = await this.kv.get(group);
      return !e ? { kind: 'absent' } : e.operation === 'PUT' ? { kind: 'held', owner: e.json<{ owner: string }>().owner } : { kind: 'released' };
    } catch {
      return null;
    }
  }

  /** Whether the bucket answers this instance now (its leader is there): a contender's clock runs only then. */
  async answers(): Promise<boolean> {
    try {
      await this.kv.get(`probe.${this.me.id}`, { timeout: JS_TIMEOUT_MS } as never);
      return true;
    } catch {
      return false;
    }
  }

  private async attempt(fn: () => Promise<number>): Promise<Outcome> {
    try {
      return { kind: 'ok', revision: await fn() };
    } catch (err) {
      this.lastError = String((err as Error)?.message ?? err).slice(0, 80);
      return isConflict(err) ? { kind: 'conflict' } : { kind: 'unavailable' };
    }
  }
}
