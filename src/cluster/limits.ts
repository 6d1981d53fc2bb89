// Limits that hold across instances (docs/cluster.md, "Limits across instances"): lookup rates per
// token subject and login throttles, which each instance keeps in memory, are told to the other
// instances over core NATS (no JetStream: nothing on the lookup path waits for a quorum, and an
// election does not stop lookups). Every 100 ms an instance publishes what it took from each
// subject's bucket since its last report (`sy.limits.lookups`), and every login failure or success
// as it happens (`sy.limits.logins`); each instance charges the others' lookups to its own buckets
// and records their logins in its own throttle. So N instances allow what one would, within the
// stated tolerance, and not N times it. While NATS is unreachable each instance enforces alone
// (the limits then hold per instance, as in the embedded default): a limit must not stop the service.
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { LoginOutcome, LoginThrottle } from '../auth/login-throttle.js';
import type { LookupRateLimiter, Taken } from '../auth/lookup-rate.js';

export const LIMIT_SUBJECTS = { lookups: 'sy.limits.lookups', logins: 'sy.limits.logins' } as const;
/** How often an instance tells the others what it took. */
export const REPORT_MS = 100;
/** Subjects per report message: a message stays far below NATS's payload limit (1 MiB by default). */
const PER_MESSAGE = 1000;
const MAX_TEXT = 1024;

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const isText = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= MAX_TEXT;

/** A report of another instance's lookups, or null when it is not one (checked: it is data from the network). */
export function parseLookupReport(data: Uint8Array): { from: string; taken: Taken[] } | null {
  try {
    const v = JSON.parse(decoder.decode(data)) as { from?: unknown; taken?: unknown };
    if (!isText(v.from) || !Array.isArray(v.taken)) return null;
    const taken = v.taken.filter((t): t is Taken => Array.isArray(t) && t.length === 3 && isText(t[0]) && isText(t[1]) && Number.isSafeInteger(t[2]) && (t[2] as number) > 0);
    return { from: v.from, taken };
  } catch {
    return null;
  }
}

/** Another instance's login outcome, or null when it is not one. */
export function parseLoginReport(data: Uint8Array): { from: string; outcome: LoginOutcome } | null {
  try {
    const v = JSON.parse(decoder.decode(data)) as { from?: unknown; kind?: unknown; user?: unknown; address?: unknown };
    if (!isText(v.from) || (v.kind !== 'failed' && v.kind !== 'succeeded') || !isText(v.user) || !isText(v.address)) return null;
    return { from: v.from, outcome: { kind: v.kind, user: v.user, address: v.address } };
  } catch {
    return null;
  }
}

export class SharedLimits {
  private readonly subs: Subscription[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** Reports sent and received (other instances' only), by kind: for metrics, and for tests to wait on. */
  readonly counters = { lookupsSent: 0, lookupsReceived: 0, loginsSent: 0, loginsReceived: 0 };

  constructor(
    private readonly nc: NatsConnection,
    private readonly instance: string,
    private readonly lookups: LookupRateLimiter,
    private readonly logins: LoginThrottle,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.lookups.share();
    this.listen(LIMIT_SUBJECTS.lookups, parseLookupReport, (r) => {
      this.counters.lookupsReceived++;
      for (const [subject, role, count] of r.taken) this.lookups.charge(subject, role, count);
    });
    this.listen(LIMIT_SUBJECTS.logins, parseLoginReport, (r) => {
      this.counters.loginsReceived++;
      this.logins.apply(r.outcome);
    });
    this.logins.share((outcome) => this.publish(LIMIT_SUBJECTS.logins, { from: this.instance, ...outcome }, 'loginsSent'));
    this.timer = setInterval(() => this.report(), REPORT_MS);
    this.timer.unref();
  }

  /** Other instances' reports on `subject`, checked (the network is not trusted for their shape); this instance's own are left out. */
  private listen<R extends { from: string }>(subject: string, parse: (data: Uint8Array) => R | null, apply: (r: R) => void): void {
    this.subs.push(
      this.nc.subscribe(subject, {
        callback: (err, m) => {
          if (err) return;
          const r = parse(m.data);
          if (r && r.from !== this.instance) apply(r);
        },
      }),
    );
  }

  /** What was taken here since the last report, told to the others (in messages of at most PER_MESSAGE subjects). */
  private report(): void {
    const taken = this.lookups.drain();
    for (let i = 0; i < taken.length; i += PER_MESSAGE) this.publish(LIMIT_SUBJECTS.lookups, { from: this.instance, taken: taken.slice(i, i + PER_MESSAGE) }, 'lookupsSent');
  }

  private publish(subject: string, body: object, counter: 'lookupsSent' | 'loginsSent'): void {
    try {
      // While NATS is away the client keeps what is published (up to its reconnect buffer) and sends it on reconnecting.
      this.nc.publish(subject, encoder.encode(JSON.stringify(body)));
      this.counters[counter]++;
    } catch (err) {
      this.log.debug({ err, subject }, 'could not tell the other instances of a limit');
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.report();
    for (const s of this.subs) s.unsubscribe();
  }
}
