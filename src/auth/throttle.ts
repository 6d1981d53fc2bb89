// Login throttling (docs/security.md), per source address and per user name: `maxFailures` failures
// inside `window` are allowed; after that each further failure doubles the wait, up to
// `maxDelay`. A success clears the key. Memory is bounded: the oldest keys go first.
export interface ThrottleOptions {
  maxFailures: number;
  window: number;
  baseDelay: number;
  maxDelay: number;
  maxKeys?: number;
}

interface Entry {
  failures: number;
  firstAt: number;
  blockedUntil: number;
}

export class Throttle {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly options: ThrottleOptions,
    private readonly now: () => number = Date.now,
  ) {}

  /** Milliseconds until any of the keys may try again; 0 when all may. */
  wait(keys: readonly string[]): number {
    const now = this.now();
    let wait = 0;
    for (const key of keys) {
      const e = this.entries.get(key);
      if (e && e.blockedUntil > now) wait = Math.max(wait, e.blockedUntil - now);
    }
    return wait;
  }

  fail(keys: readonly string[]): void {
    const now = this.now();
    const { maxFailures, window, baseDelay, maxDelay } = this.options;
    for (const key of keys) {
      let e = this.entries.get(key);
      if (!e || (now - e.firstAt > window && e.blockedUntil <= now)) e = { failures: 0, firstAt: now, blockedUntil: 0 };
      e.failures++;
      if (e.failures >= maxFailures) {
        e.blockedUntil = now + Math.min(maxDelay, baseDelay * 2 ** Math.min(30, e.failures - maxFailures));
      }
      this.entries.delete(key);
      this.entries.set(key, e);
    }
    const max = this.options.maxKeys ?? 100_000;
    while (this.entries.size > max) this.entries.delete(this.entries.keys().next().value!);
  }

  succeed(keys: readonly string[]): void {
    for (const key of keys) this.entries.delete(key);
  }
}
