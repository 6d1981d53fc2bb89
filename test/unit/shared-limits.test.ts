// Limits across instances (docs/cluster.md, "Limits across instances"), as pure logic on a fake
// clock: N lookup limiters that charge each other's reports, delivered late, grant one subject no
// more than the stated tolerance over any span; N login throttles that apply each other's outcomes
// judge as one would. The wiring over NATS is tested with real instances (test/cluster/limits.test.ts).
import test from 'ava';
import fc from 'fast-check';
import { LoginThrottle, type LoginOutcome } from '../../src/auth/login-throttle.js';
import { LookupRateLimiter } from '../../src/auth/lookup-rate.js';
import { parseLoginReport, parseLookupReport } from '../../src/cluster/limits.js';

interface Sim {
  /** Lookups granted, with when. */
  granted: number[];
  /** The longest a report took from a grant to the last instance charging it (ms). */
  d: number;
}

/**
 * N limiters on one fake clock: each attempt at (time, instance); every `reportMs` each instance
 * drains what it took, delivered to each other instance `transitMs` later (when `shared`).
 */
function simulate(n: number, rate: { perSecond: number; burst: number }, attempts: Array<{ at: number; on: number }>, reportMs: number, transitMs: number, shared = true): Sim {
  let now = 0;
  const limiters = Array.from({ length: n }, () => new LookupRateLimiter({ app: rate }, () => now));
  if (shared) for (const l of limiters) l.share();
  const inFlight: Array<{ at: number; to: number; count: number }> = [];
  const granted: number[] = [];
  let nextReport = reportMs;
  const advance = (to: number) => {
    for (;;) {
      const due = Math.min(nextReport, ...inFlight.map((m) => m.at));
      if (due > to) break;
      now = due;
      for (const m of inFlight.filter((x) => x.at === due)) limiters[m.to]!.charge('s', 'app', m.count);
      inFlight.splice(0, inFlight.length, ...inFlight.filter((x) => x.at !== due));
      if (due === nextReport) {
        nextReport += reportMs;
        if (shared)
          limiters.forEach((l, from) => {
            for (const [, , count] of l.drain()) for (let to = 0; to < n; to++) if (to !== from) inFlight.push({ at: now + transitMs, to, count });
          });
      }
    }
    now = to;
  };
  for (const a of [...attempts].sort((x, y) => x.at - y.at)) {
    advance(a.at);
    if (limiters[a.on]!.take('s', 'app') === 0) granted.push(now);
  }
  return { granted, d: reportMs + transitMs };
}

/** The most lookups granted over any span, against the tolerance: B + r·span + (N−1)·(B + r·d). */
function worstExcess(granted: number[], n: number, rate: { perSecond: number; burst: number }, d: number): number {
  let worst = -Infinity;
  for (let i = 0; i < granted.length; i++)
    for (let j = i; j < granted.length; j++) {
      const span = granted[j]! - granted[i]!;
      const bound = rate.burst + (rate.perSecond * span) / 1000 + (n - 1) * (rate.burst + (rate.perSecond * d) / 1000);
      worst = Math.max(worst, j - i + 1 - bound);
    }
  return worst;
}

const attempts = (n: number) => fc.array(fc.record({ at: fc.integer({ min: 0, max: 20_000 }), on: fc.integer({ min: 0, max: n - 1 }) }), { minLength: 1, maxLength: 400 });

test('N instances charging each other grant a subject at most B + r·span + (N−1)·(B + r·d) over any span, d being the report period plus transit', (t) => {
  fc.assert(
    fc.property(
      fc.integer({ min: 2, max: 4 }).chain((n) => fc.tuple(fc.constant(n), attempts(n))),
      fc.integer({ min: 1, max: 20 }),
      fc.integer({ min: 1, max: 10 }),
      fc.integer({ min: 0, max: 50 }),
      ([n, tries], perSecond, burst, transitMs) => {
        const rate = { perSecond, burst };
        const sim = simulate(n, rate, tries, 100, transitMs);
        return worstExcess(sim.granted, n, rate, sim.d) <= 1e-9;
      },
    ),
    { numRuns: 300 },
  );
  t.pass();
});

test('without the reports each instance grants its own rate: N instances give N times (the property above would fail)', (t) => {
  const rate = { perSecond: 2, burst: 5 };
  // 3 instances, 20 s of one attempt every 10 ms, round robin.
  const tries = Array.from({ length: 2000 }, (_, i) => ({ at: i * 10, on: i % 3 }));
  const alone = simulate(3, rate, tries, 100, 10, false);
  const shared = simulate(3, rate, tries, 100, 10, true);
  t.true(worstExcess(alone.granted, 3, rate, alone.d) > 0, `alone: ${alone.granted.length} granted`);
  t.true(worstExcess(shared.granted, 3, rate, shared.d) <= 0, `shared: ${shared.granted.length} granted`);
  // Over the long run the cluster grants what one instance would: burst + rate × 20 s, and a little.
  t.true(shared.granted.length <= 5 + 2 * 20 + 2 * (5 + 2 * 0.11), `shared: ${shared.granted.length}`);
  t.true(alone.granted.length >= 3 * (5 + 2 * 19));
});

test('a subject that used its burst on one instance is refused on another once the report came, and waits off the debt', (t) => {
  let now = 0;
  const a = new LookupRateLimiter({ app: { perSecond: 1, burst: 3 } }, () => now);
  const b = new LookupRateLimiter({ app: { perSecond: 1, burst: 3 } }, () => now);
  a.share();
  for (let i = 0; i < 3; i++) t.is(a.take('s', 'app'), 0);
  t.true(a.take('s', 'app') > 0);
  for (const [subject, role, count] of a.drain()) b.charge(subject, role, count);
  t.deepEqual(a.drain(), [], 'a report is sent once');
  t.is(b.take('s', 'app'), 1000, 'one token short: a second');
  t.is(b.take('other', 'app'), 0, 'subjects are apart');
  b.charge('s', 'app', 2);
  t.is(b.take('s', 'app'), 3000, 'a debt of two more tokens is waited off');
  now += 3000;
  t.is(b.take('s', 'app'), 0);
  b.charge('x', 'unknown-role', 5);
  t.is(b.take('x', 'app'), 0, 'a role this instance does not limit is not charged');
});

test('N login throttles applying each other’s outcomes judge every login as one throttle seeing them all', (t) => {
  const options = { maxFailures: 3, maxAddressFailures: 6, window: 60_000, baseDelay: 1000, maxDelay: 8000, userSlowdown: 500 };
  fc.assert(
    fc.property(
      fc.array(fc.record({ on: fc.integer({ min: 0, max: 2 }), user: fc.constantFrom('admin', 'ops'), address: fc.constantFrom('a1', 'a2', 'a3'), ok: fc.boolean(), dt: fc.nat(3000) }), {
        maxLength: 120,
      }),
      (logins) => {
        let now = 0;
        const clock = () => now;
        const one = new LoginThrottle(options, clock);
        const many = [0, 1, 2].map(() => new LoginThrottle(options, clock));
        for (const [i, th] of many.entries()) {
          th.share((o: LoginOutcome) => {
            for (const [j, other] of many.entries()) if (j !== i) other.apply(o);
          });
        }
        for (const l of logins) {
          now += l.dt;
          const verdict = one.before(l.user, l.address);
          if (JSON.stringify(many[l.on]!.before(l.user, l.address)) !== JSON.stringify(verdict)) return false;
          if ('refuse' in verdict) continue;
          if (l.ok) {
            one.succeeded(l.user, l.address);
            many[l.on]!.succeeded(l.user, l.address);
          } else {
            one.failed(l.user, l.address);
            many[l.on]!.failed(l.user, l.address);
          }
        }
        return true;
      },
    ),
  );
  t.pass();
});

test('reports from the network are checked: anything that is not one is dropped', (t) => {
  const enc = (v: unknown) => new TextEncoder().encode(typeof v === 'string' ? v : JSON.stringify(v));
  t.deepEqual(parseLookupReport(enc({ from: 'i1', taken: [['app-1', 'app', 3]] })), { from: 'i1', taken: [['app-1', 'app', 3]] });
  t.deepEqual(parseLookupReport(enc({ from: 'i1', taken: [['app-1', 'app', -3], ['x', 'app', 1.5], ['y', 'app'], 'z', ['w', 'app', 2]] })), { from: 'i1', taken: [['w', 'app', 2]] });
  t.is(parseLookupReport(enc('not json')), null);
  t.is(parseLookupReport(enc({ taken: [] })), null);
  t.deepEqual(parseLoginReport(enc({ from: 'i2', kind: 'failed', user: 'admin', address: '::1' })), { from: 'i2', outcome: { kind: 'failed', user: 'admin', address: '::1' } });
  t.is(parseLoginReport(enc({ from: 'i2', kind: 'deleted', user: 'admin', address: '::1' })), null);
  t.is(parseLoginReport(enc({ from: 'i2', kind: 'failed', user: 'x'.repeat(5000), address: '::1' })), null);
});
