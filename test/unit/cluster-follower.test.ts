// When an instance's follower of the cluster's event log has stopped (src/policy/cluster/follower.ts):
// behind the stream and not moving for stallMs. Not while it moves, however far behind; not while
// the stream does not answer (an election: the follower cannot move either).
import test from 'ava';
import fc from 'fast-check';
import { checkFollower, followerWatch } from '../../src/policy/cluster/follower.js';

const STALL = 3000;

test('a follower behind the stream that does not move for the stall time is restarted, once per stall', (t) => {
  let w = followerWatch(100, 0);
  let r = checkFollower(w, 100, 150, 1000, STALL);
  t.false(r.restart, 'behind, but not for long');
  r = checkFollower((w = r.watch), 100, 160, 2999, STALL);
  t.false(r.restart);
  r = checkFollower((w = r.watch), 100, 170, 3000, STALL);
  t.true(r.restart, 'behind and still for 3 s');
  r = checkFollower((w = r.watch), 100, 170, 4000, STALL);
  t.false(r.restart, 'the restarted follower gets its own 3 s');
  r = checkFollower((w = r.watch), 100, 170, 6000, STALL);
  t.true(r.restart);
});

test('moving (however far behind), level with the stream, or a stream that does not answer: never a restart', (t) => {
  fc.assert(
    fc.property(
      fc.array(fc.record({ dt: fc.integer({ min: 0, max: 5000 }), step: fc.integer({ min: 0, max: 50 }), behind: fc.integer({ min: 0, max: 1000 }), answers: fc.boolean() }), { maxLength: 100 }),
      (checks) => {
        let now = 0;
        let seq = 0;
        let w = followerWatch(seq, now);
        let stillSince = 0;
        for (const c of checks) {
          now += c.dt;
          seq += c.step;
          const last = c.answers ? seq + c.behind : null;
          const r = checkFollower(w, seq, last, now, STALL);
          w = r.watch;
          // A restart only when it was behind at this check, did not move since the last one, and has been still for STALL.
          if (c.step > 0 || last === null || c.behind === 0) stillSince = now;
          if (r.restart !== now - stillSince >= STALL) return false;
          if (r.restart) stillSince = now;
        }
        return true;
      },
    ),
  );
  t.pass();
});
