// Timeouts a test fires itself (src/platforms/terraform/runner.ts Timers): a command "times out"
// when the test says so, once it knows the command hangs, never because the machine was slow.
import type { Timers } from '../../src/platforms/terraform/runner.js';

export interface ManualTimer {
  ms: number;
  what: string;
  /** Whether the code that armed it has cancelled it (its command ended). */
  cancelled: boolean;
  fire(): void;
}

export class ManualTimers implements Timers {
  readonly armed: ManualTimer[] = [];
  private taken = new Set<ManualTimer>();
  private waiters: Array<{ what: string; resolve(t: ManualTimer): void }> = [];

  start(ms: number, fire: () => void, what: string): () => void {
    const timer: ManualTimer = {
      ms,
      what,
      cancelled: false,
      fire: () => {
        if (!timer.cancelled) fire();
      },
    };
    this.armed.push(timer);
    const waiter = this.waiters.find((w) => w.what === what);
    if (waiter) {
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      this.taken.add(timer);
      waiter.resolve(timer);
    }
    return () => {
      timer.cancelled = true;
    };
  }

  /** The next timer armed for `what` (init, show, output, apply) that no earlier call took. */
  next(what: string): Promise<ManualTimer> {
    const ready = this.armed.find((t) => t.what === what && !this.taken.has(t));
    if (ready) {
      this.taken.add(ready);
      return Promise.resolve(ready);
    }
    return new Promise((resolve) => this.waiters.push({ what, resolve }));
  }
}
