// Lookup rate limits per token subject (README, Security): a token bucket per subject, sized by
// its role (limits.lookups in the config). One app or one leaked token cannot take the front end's
// whole capacity; past its rate a subject gets 429 with the wait until its next token. Memory is
// bounded: the least recently seen subjects go first (an evicted bucket starts full again, which
// at worst lets one burst through).
import type { LookupRate } from '../config/types.js';

interface Bucket {
  tokens: number;
  /** ms of the last refill. */
  at: number;
}

export class LookupRateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly rates: Readonly<Record<string, LookupRate>>,
    private readonly now: () => number = Date.now,
    private readonly maxSubjects = 100_000,
  ) {}

  /** Takes one lookup for `subject`: 0 when allowed, else the ms until it would be. */
  take(subject: string, role: string): number {
    const rate = this.rates[role];
    if (!rate || rate.perSecond === 0) return 0;
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
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - b.tokens) * 1000) / rate.perSecond);
  }
}
