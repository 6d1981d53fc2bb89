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

// The same rule guards the KV watches (src/cluster/watch.ts): the watch's position is the last
// revision it delivered, lifted to the bucket's first sequence - 1 (entries aged out, max_age, are
// not waited for), and the bucket's last sequence moves with writes to any key.
test('a bucket watch: restarted exactly when it stands still behind what the bucket still holds for the stall time', (t) => {
  fc.assert(
    fc.property(
      fc.array(
        fc.record({
          dt: fc.integer({ min: 0, max: 2000 }),
          writes: fc.integer({ min: 0, max: 3 }),
          delivers: fc.integer({ min: 0, max: 4 }),
          agesOut: fc.integer({ min: 0, max: 4 }),
          answers: fc.boolean(),
        }),
        { maxLength: 120 },
      ),
      (checks) => {
        let now = 0;
        let bucketLast = 0;
        let bucketFirst = 1;
        let delivered = 0;
        let w = followerWatch(0, 0);
        let position = 0;
        let stillSince = 0;
        for (const c of checks) {
          now += c.dt;
          bucketLast += c.writes;
          bucketFirst = Math.min(bucketLast + 1, bucketFirst + c.agesOut);
          delivered = Math.min(bucketLast, delivered + c.delivers);
          const before = position;
          // watch.ts: the position only moves forward, lifted past what aged out when the bucket answers.
          position = Math.max(position, delivered, c.answers ? bucketFirst - 1 : 0);
          const r = checkFollower(w, position, c.answers ? bucketLast : null, now, STALL);
          w = r.watch;
          if (position !== before || !c.answers || position >= bucketLast) stillSince = now;
          if (r.restart !== now - stillSince >= STALL) return false;
          if (r.restart) stillSince = now;
          // A watch level with all the bucket still holds is never made again.
          if (r.restart && position >= bucketLast) return false;
        }
        return true;
      },
    ),
    { numRuns: 500 },
  );
  t.pass();
});
