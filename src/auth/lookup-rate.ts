// Lookup rate limits per token subject (README, Security): a token bucket per subject, sized by
// its role (limits.lookups in the config). One app or one leaked token cannot take the front end's
// whole capacity; past its rate a subject gets 429 with the wait until its next token. Memory is
// bounded: the least recently seen subjects go first (an evicted bucket starts full again, which
// at worst lets one burst through).
//
// In cluster mode the other instances' lookups are charged here too (src/cluster/limits.ts: each
// instance tells the others what it took, every 100 ms): a bucket pays for them and may go below
// zero, a debt its subject repays by waiting. So the rate holds for the cluster, not per instance,
// within the tolerance docs/cluster.md states.
import type { LookupRate } from '../config/types.js';

interface Bucket {
  tokens: number;
  /** ms of the last refill. */
  at: number;
}

/** Lookups taken for a subject here, to be told to the other instances. */
export type Taken = [subject: string, role: string, count: number];

export class LookupRateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  /** Cluster mode: what was taken here since the last `drain`, by subject. */
  private taken: Map<string, { role: string; count: number }> | null = null;

  constructor(
    private readonly rates: Readonly<Record<string, LookupRate>>,
    private readonly now: () => number = Date.now,
    private readonly maxSubjects = 100_000,
  ) {}

  /** Takes one lookup for `subject`: 0 when allowed, else the ms until it would be. */
  take(subject: string, role: string): number {
    const rate = this.rates[role];
    if (!rate || rate.perSecond === 0) return 0;
    const b = this.refilled(subject, rate);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      if (this.taken) {
        const t = this.taken.get(subject);
        if (t) t.count++;
        else this.taken.set(subject, { role, count: 1 });
      }
      return 0;
    }
    return Math.ceil(((1 - b.tokens) * 1000) / rate.perSecond);
  }

  /** Cluster mode: from now on, what is taken here is kept for `drain`. */
  share(): void {
    this.taken ??= new Map();
  }

  /** What was taken here since the last drain (cluster mode), and forgets it. */
  drain(): Taken[] {
    if (!this.taken || this.taken.size === 0) return [];
    const out: Taken[] = [...this.taken].map(([subject, t]) => [subject, t.role, t.count]);
    this.taken.clear();
    return out;
  }

  /** Lookups another instance took for `subject`: paid from its bucket here, below zero if need be. */
  charge(subject: string, role: string, count: number): void {
    const rate = this.rates[role];
    if (!rate || rate.perSecond === 0) return;
    this.refilled(subject, rate).tokens -= count;
  }

  /** The subject's bucket, refilled up to now (a new one full), and made the most recently seen. */
  private refilled(subject: string, rate: LookupRate): Bucket {
    const now = this.now();
    let b = this.buckets.get(subject);
    if (b) {
      b.tokens = Math.min(rate.burst, b.tokens + ((now - b.at) * rate.perSecond) / 1000);
      b.at = now;
      // Most recently seen last: eviction takes the front.
      this.buckets.delete(subject);
    } else {
      b = { tokens: rate.burst, at: now };
      if (this.buckets.size >= this.maxSubjects) this.buckets.delete(this.buckets.keys().next().value!);
    }
    this.buckets.set(subject, b);
    return b;
  }
}
