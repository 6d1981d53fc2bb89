// The short form of `npm run torture` (issue 6.1): ten kill -9s of the real service under a mixed
// load of acknowledged writes and of answers that reveal writes in flight, some while it starts;
// after each, the store is consistent, every acknowledged or revealed value is there, and the event
// log holds every event a client following it across the kills was sent, under the same id.
import test from 'ava';
import { torture } from '../reliability/torture.js';

test('kill -9 under load loses no acknowledged write or revealed value, keeps every event id, and leaves the store consistent', async (t) => {
  t.timeout(180_000);
  const report = await torture({ cycles: 10, ...(process.env.TORTURE_SEED ? { seed: Number(process.env.TORTURE_SEED) } : {}), log: (line) => t.log(line) });
  t.log(`seed ${report.seed} (TORTURE_SEED replays its choices)`);
  t.deepEqual(report.losses, []);
  t.deepEqual(report.inconsistencies, []);
  t.deepEqual(report.eventProblems, []);
  t.is(report.cycles.length, 10);
  const acknowledged = report.cycles.reduce((a, c) => a + c.acknowledged, 0);
  const cutOff = report.cycles.reduce((a, c) => a + c.cutOff, 0);
  t.true(acknowledged >= 50, `only ${acknowledged} writes were acknowledged: the load did not run`);
  t.true(cutOff > 0, 'no write was in flight at any kill: the kills did not test anything');
  t.true(report.cycles.reduce((a, c) => a + c.revealed, 0) > 0, 'no answer revealed anything');
  t.true(report.eventsReceived > 0, 'the event stream was not followed');
});
