import test from 'ava';
import { Throttle } from '../../src/auth/throttle.js';

const options = { maxFailures: 3, window: 60_000, baseDelay: 1000, maxDelay: 8000 };

test('failures past the limit block the key, and each further failure doubles the wait', (t) => {
  let now = 0;
  const th = new Throttle(options, () => now);
  th.fail(['ip:a']);
  th.fail(['ip:a']);
  t.is(th.wait(['ip:a']), 0);
  th.fail(['ip:a']);
  t.is(th.wait(['ip:a']), 1000);
  now += 1000;
  t.is(th.wait(['ip:a']), 0);
  th.fail(['ip:a']);
  t.is(th.wait(['ip:a']), 2000);
  now += 2000;
  th.fail(['ip:a']);
  now += 4000;
  th.fail(['ip:a']);
  t.is(th.wait(['ip:a']), 8000, 'capped at maxDelay');
});

test('keys are independent, a success clears one, and the window forgives old failures', (t) => {
  let now = 0;
  const th = new Throttle(options, () => now);
  for (let i = 0; i < 3; i++) th.fail(['ip:a', 'user:x']);
  t.true(th.wait(['ip:b', 'user:x']) > 0, 'the user is blocked from any address');
  t.is(th.wait(['ip:b', 'user:y']), 0);
  th.succeed(['ip:a', 'user:x']);
  t.is(th.wait(['ip:a', 'user:x']), 0);
  th.fail(['ip:c']);
  th.fail(['ip:c']);
  now += 61_000;
  th.fail(['ip:c']);
  t.is(th.wait(['ip:c']), 0, 'failures older than the window do not count');
});

test('memory stays bounded', (t) => {
  const th = new Throttle({ ...options, maxKeys: 100 }, () => 0);
  for (let i = 0; i < 1000; i++) th.fail([`ip:${i}`]);
  t.is(th.wait(['ip:0']), 0);
  t.is((th as unknown as { entries: Map<string, unknown> }).entries.size, 100);
});

// ---- logins (README, Security): refused per address and per (user, address), only slowed per user

import fc from 'fast-check';
import { LoginThrottle } from '../../src/auth/login-throttle.js';

const login = { maxFailures: 3, maxAddressFailures: 6, window: 60_000, baseDelay: 1000, maxDelay: 8000, userSlowdown: 500 };

test('failures from any number of addresses never refuse a user at an address that has not failed, and only slow it down by userSlowdown at most', (t) => {
  fc.assert(
    fc.property(
      fc.array(fc.record({ user: fc.constantFrom('admin', 'ops', 'app'), address: fc.constantFrom('a1', 'a2', 'a3', 'a4', 'a5'), dt: fc.nat(5000) }), { maxLength: 200 }),
      fc.constantFrom('admin', 'ops'),
      (failures, victim) => {
        let now = 0;
        const th = new LoginThrottle(login, () => now);
        for (const f of failures) {
          now += f.dt;
          th.failed(f.user, f.address);
        }
        const verdict = th.before(victim, 'fresh-address');
        return 'delay' in verdict && verdict.delay <= login.userSlowdown;
      },
    ),
  );
  t.pass();
});

test('an address is refused after maxFailures for one user, or maxAddressFailures over all users; a right password clears it', (t) => {
  const now = 0;
  const th = new LoginThrottle(login, () => now);
  for (let i = 0; i < 3; i++) th.failed('admin', 'a1');
  t.deepEqual(th.before('admin', 'a1'), { refuse: 1000 });
  t.deepEqual(th.before('ops', 'a1'), { delay: 0 }, 'another user at that address still has its own allowance');
  t.deepEqual(th.before('admin', 'a2'), { delay: 500 }, 'the user elsewhere is slowed, capped at userSlowdown');
  for (let i = 0; i < 3; i++) th.failed(`user${i}`, 'a3');
  t.deepEqual(th.before('someone', 'a3'), { delay: 0 });
  for (let i = 3; i < 6; i++) th.failed(`user${i}`, 'a3');
  t.true('refuse' in th.before('someone', 'a3'), 'credential stuffing from one address is refused');
  th.succeeded('admin', 'a1');
  t.deepEqual(th.before('admin', 'a1'), { delay: 500 }, 'cleared for the address; still slowed as a user failing elsewhere');
});

// ---- lookups per token subject (README, Security)

import { LookupRateLimiter } from '../../src/auth/lookup-rate.js';

test('a subject gets at most its burst plus its rate over any span, whatever the timing; 0 is no limit; subjects are apart', (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 100 }), fc.array(fc.integer({ min: 0, max: 400 }), { minLength: 1, maxLength: 300 }), (perSecond, burst, gaps) => {
      let now = 0;
      const limiter = new LookupRateLimiter({ app: { perSecond, burst }, admin: { perSecond: 0, burst: 1 } }, () => now);
      const allowed: number[] = [];
      for (const gap of gaps) {
        now += gap;
        const wait = limiter.take('app-1', 'app');
        if (wait === 0) allowed.push(now);
        else if (wait > Math.ceil(1000 / perSecond)) return false; // never longer than one token's refill
        if (limiter.take('admin-1', 'admin') !== 0) return false;
      }
      // Over every span [allowed[i], allowed[j]], at most burst + rate × span lookups.
      for (let i = 0; i < allowed.length; i++) {
        for (let j = i; j < allowed.length; j++) {
          if (j - i + 1 > burst + ((allowed[j]! - allowed[i]!) * perSecond) / 1000 + 1e-9) return false;
        }
      }
      return allowed.length >= Math.min(burst, gaps.length);
    }),
  );
  t.pass();
});
