// Scheduled capacity (src/policy/scaling/schedules.ts) on a fake clock: a window is open exactly
// while its most recent start is less than its duration ago (checked minute by minute against the
// cron expression itself), in its own time zone; overlapping windows take the largest min and
// max; and the plan meets a window's min when it opens, saying why, and lets it go when it closes.
import test from 'ava';
import fc from 'fast-check';
import type { ScheduleConfig } from '../../src/config/types.js';
import type { NodeFacts } from '../../src/policy/scaling/facts.js';
import { planCapacity } from '../../src/policy/scaling/plan.js';
import { cronOf, openWindows, rulesAt, scheduleProblem } from '../../src/policy/scaling/schedules.js';
import { localPlatformGroup, nodeFacts, parsedGroup } from '../helpers/fixtures.js';

const MINUTE = 60_000;
const rule = { region: 'r1', role: 'edge' as const, min: 1, max: 10, increment: 1, rank: 'x', limit: 10, cooldown: 60_000, requestBudget: 1 };
const schedule = (over: Partial<ScheduleConfig>): ScheduleConfig => ({ name: 's', cron: '0 18 * * *', duration: 4 * 3600_000, timezone: 'UTC', role: 'edge', min: 5, ...over });

test('a window is open exactly while a start of its cron expression is less than its duration ago', (t) => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 59 }),
      fc.integer({ min: 0, max: 23 }),
      fc.constantFrom('*', 'MON', 'FRI', 'SAT,SUN'),
      fc.integer({ min: 1, max: 300 }),
      fc.integer({ min: 0, max: 366 * 24 * 60 }),
      fc.constantFrom('UTC', 'Europe/Berlin', 'America/New_York'),
      (minute, hour, weekday, durationMin, offsetMin, timezone) => {
        const s = schedule({ cron: `${minute} ${hour} * * ${weekday}`, duration: durationMin * MINUTE, timezone });
        const now = Date.UTC(2026, 0, 1) + offsetMin * MINUTE + 30_000;
        const open = openWindows([s], [rule], now).length === 1;
        // The reference: any whole minute within the duration before now that the expression matches.
        const cron = cronOf(s.cron, timezone);
        let expected = false;
        for (let m = Math.floor(now / MINUTE) * MINUTE; m > now - s.duration; m -= MINUTE) {
          if (cron.match(new Date(m))) {
            expected = true;
            break;
          }
        }
        return open === expected;
      },
    ),
    { numRuns: 300 },
  );
  t.pass();
});

test('the time zone is the schedule’s: 18:00 in Berlin is 17:00 UTC in winter and 16:00 in summer', (t) => {
  const berlin = schedule({ timezone: 'Europe/Berlin', duration: 30 * MINUTE });
  t.is(openWindows([berlin], [rule], Date.UTC(2026, 10, 27, 17, 10)).length, 1);
  t.is(openWindows([berlin], [rule], Date.UTC(2026, 10, 27, 18, 10)).length, 0);
  t.is(openWindows([berlin], [rule], Date.UTC(2026, 6, 3, 16, 10)).length, 1);
  t.like(openWindows([berlin], [rule], Date.UTC(2026, 10, 27, 17, 10))[0], { from: Date.UTC(2026, 10, 27, 17, 0), until: Date.UTC(2026, 10, 27, 17, 30) });
});

test('overlapping windows: the largest min and the largest max of those that set them; a max below the min is raised to it; other rules untouched', (t) => {
  const now = Date.UTC(2026, 10, 27, 19, 0);
  const rules = [rule, { ...rule, role: 'origin' as const }];
  const [edge, origin] = rulesAt(rules, [schedule({ name: 'a', min: 3 }), schedule({ name: 'b', min: 7, max: 4 }), schedule({ name: 'c', cron: '0 6 * * *', min: 9 })], now);
  t.like(edge, { min: 7, max: 7 });
  t.deepEqual(
    edge!.windows.map((w) => w.name),
    ['a', 'b'],
  );
  t.like(origin, { min: 1, max: 10, windows: [] });
  t.like(rulesAt(rules, [schedule({ max: 2, min: undefined })], now)[0], { min: 1, max: 2 });
});

test('bad cron expressions and time zones are named', (t) => {
  t.is(scheduleProblem('0 18 * * FRI', 'Europe/Berlin'), null);
  t.like(scheduleProblem('every friday', 'UTC'), { field: 'cron' });
  t.like(scheduleProblem('0 18 * * FRI', 'Mars/Olympus'), { field: 'timezone' });
  t.like(scheduleProblem('0 0 31 2 *', 'UTC'), { field: 'cron' });
});

test("the plan meets a window's min when it opens, saying which schedule, and returns to the rule's own when it closes", (t) => {
  const group = parsedGroup({
    ...localPlatformGroup({ regions: ['r1'], rules: [{ region: 'r1', role: 'edge', min: 1, max: 10, limit: 10 }] }),
    schedules: [{ name: 'match-night', cron: '0 18 27 11 *', duration: '4h', timezone: 'UTC', role: 'edge', min: 5 }],
  });
  const edge = (id: string): NodeFacts => nodeFacts({ id, role: 'edge' });

  const at = (h: number, m: number) => Date.UTC(2026, 10, 27, h, m);
  const creates = (now: number, nodes: NodeFacts[]) => planCapacity({ group, nodes, now, busy: new Set(), requests: [] }).filter((a) => a.type === 'create');
  t.deepEqual(creates(at(17, 59), [edge('e1')]), []);
  const opened = creates(at(18, 0), [edge('e1')]);
  t.like(opened, [{ count: 4, trigger: 'schedule' }]);
  t.regex((opened[0] as { reason: string }).reason, /below min 5 \(schedule 'match-night' until 2026-11-27T22:00:00.000Z\)/);
  t.deepEqual(creates(at(21, 59), [edge('e1'), edge('e2'), edge('e3'), edge('e4'), edge('e5')]), []);
  t.deepEqual(creates(at(22, 0), [edge('e1')]), [], 'closed: min is 1 again');
});
