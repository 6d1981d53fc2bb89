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
