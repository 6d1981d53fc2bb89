// Login throttling (README, Security): failed logins are refused per source address and per
// (user name, address), with a wait that doubles; a user failing from many addresses is only
// slowed down, never refused, so that nobody can lock the admin out of an address that has not
// failed (a per-user lockout let anyone do that by guessing from a few addresses).
import { Throttle, type ThrottleOptions } from './throttle.js';

export interface LoginThrottleOptions extends ThrottleOptions {
  /** Failures one address may have (all user names together) before it is refused. */
  maxAddressFailures: number;
  /** The most a login of a user failing from many addresses is held before its check. */
  userSlowdown: number;
}

export type LoginVerdict = { refuse: number } | { delay: number };

/** A login's outcome, as one instance tells the others. */
export interface LoginOutcome {
  kind: 'failed' | 'succeeded';
  user: string;
  address: string;
}

const ip = (address: string) => `ip:${address}`;
const pair = (user: string, address: string) => `pair:${address}\u0000${user}`;
const person = (user: string) => `user:${user}`;

export class LoginThrottle {
  /** (user, address) pairs: refused after `maxFailures`. */
  private readonly pairs: Throttle;
  /**
   * Addresses, whatever user they try: refused after `maxAddressFailures` (more than a pair's,
   * so that one person's typos do not lock out an office behind the same address).
   */
  private readonly addresses: Throttle;
  /** User names across addresses: slowed, up to `userSlowdown`. */
  private readonly users: Throttle;
  /** Cluster mode: where each outcome here is told. */
  private tell: ((outcome: LoginOutcome) => void) | null = null;

  constructor(
    private readonly options: LoginThrottleOptions,
    now: () => number = Date.now,
  ) {
    this.pairs = new Throttle(options, now);
    this.addresses = new Throttle({ ...options, maxFailures: options.maxAddressFailures }, now);
    this.users = new Throttle(options, now);
  }

  /** Before a password is checked: refused for `refuse` ms, or checked after `delay` ms. */
  before(user: string, address: string): LoginVerdict {
    const wait = Math.max(this.pairs.wait([pair(user, address)]), this.addresses.wait([ip(address)]));
    if (wait > 0) return { refuse: wait };
    return { delay: Math.min(this.options.userSlowdown, this.users.wait([person(user)])) };
  }

  failed(user: string, address: string): void {
    this.record({ kind: 'failed', user, address });
    this.tell?.({ kind: 'failed', user, address });
  }

  /**
   * A right password clears its address and pair. The user's slowdown stays until its window
   * passes: an attacker's guesses from elsewhere must not get a fresh allowance each time the
   * admin logs in.
   */
  succeeded(user: string, address: string): void {
    this.record({ kind: 'succeeded', user, address });
    this.tell?.({ kind: 'succeeded', user, address });
  }

  /** Cluster mode: each outcome here is also given to `tell`. */
  share(tell: (outcome: LoginOutcome) => void): void {
    this.tell = tell;
  }

  /** Another instance's outcome: recorded here as if it happened here (and not told again). */
  apply(outcome: LoginOutcome): void {
    this.record(outcome);
  }

  private record({ kind, user, address }: LoginOutcome): void {
    if (kind === 'failed') {
      this.pairs.fail([pair(user, address)]);
      this.addresses.fail([ip(address)]);
      this.users.fail([person(user)]);
    } else {
      this.pairs.succeed([pair(user, address)]);
      this.addresses.succeed([ip(address)]);
    }
  }
}
