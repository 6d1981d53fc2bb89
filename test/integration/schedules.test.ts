// Scheduled capacity through the service (docs/scaling.md, "Schedules"): a schedule whose window is
// open raises the edges' min, the supervisor creates them (scaling.action with trigger schedule),
// and the group's detail and the CLI say which window is open, until when, and when the next
// opens. Local simulated nodes; the window is one every minute, an hour long, so it is open now.
import test from 'ava';
import type { EventRecord } from '../../src/domain/events.js';
import { cli, loggedIn } from '../helpers/cli.js';
import { inService, waitForEvents } from '../helpers/events.js';
import { staticGroup, startTestService } from '../helpers/service.js';

test('an open window raises a min: the nodes come, the action says which schedule; detail and CLI show it', async (t) => {
  const group = {
    ...staticGroup({
      name: 'g',
      regions: ['r1'],
      rules: [
        { region: 'r1', role: 'origin', min: 1, max: 2, limit: 10 },
        { region: 'r1', role: 'edge', min: 0, max: 5, limit: 10 },
      ],
    }),
    platform: { type: 'local', local: { firstAddress: '127.1.80.2', port: 0 } },
    schedules: [
      { name: 'always-now', cron: '* * * * *', duration: '1h', role: 'edge', min: 2 },
      { name: 'new-year', cron: '0 0 1 1 *', duration: '6h', timezone: 'Europe/Berlin', role: 'edge', region: 'r1', max: 5 },
    ],
  };
  const svc = await startTestService({ groups: [group] });
  t.teardown(() => svc.close());
  const seen = await waitForEvents(svc.url, svc.adminToken, (s) => inService(s).size >= 3, { timeoutMs: 30_000 });
  const action = seen.find((e) => e.type === 'scaling.action' && e.role === 'edge') as Extract<EventRecord, { type: 'scaling.action' }>;
  t.like(action, { action: 'create', count: 2, trigger: 'schedule' });
  t.regex(action.reason, /below min 2 \(schedule 'always-now' until /);

  const detail = (await svc.get('/as/v1/nodegroups/g')).json as {
    scaling: Array<{ role: string; min: number; max: number; schedules: Array<{ name: string; min?: number; until: string }> }>;
    schedules: Array<{ name: string; next: string | null; timezone: string }>;
  };
  const edges = detail.scaling.find((r) => r.role === 'edge')!;
  t.like(edges, { min: 2, max: 5 });
  t.deepEqual(
    edges.schedules.map((w) => [w.name, w.min]),
    [['always-now', 2]],
  );
  t.true(Date.parse(edges.schedules[0]!.until) > Date.now());
  t.like(
    detail.schedules.find((x) => x.name === 'new-year'),
    { timezone: 'Europe/Berlin' },
  );
  t.regex(detail.schedules.find((x) => x.name === 'new-year')!.next!, /^\d{4}-12-31T23:00:00\.000Z$/, 'midnight in Berlin is 23:00 UTC in winter');

  const home = await loggedIn(t, svc);
  const shown = await cli(home, ['nodegroups', 'show', 'g']);
  t.is(shown.code, 0, shown.stderr);
  t.regex(shown.stdout, /always-now\s+edge\s+\(all\)\s+\* \* \* \* \*\s+UTC\s+\S+\s+r1\/edge min 2 until /);
  const status = await cli(home, ['status']);
  t.regex(status.stdout, /g\s+always-now\s+r1\s+edge\s+2\s+-\s+\d{4}-/);
});

test('bad schedules are refused with the field named', async (t) => {
  const svc = await startTestService({ groups: [] });
  t.teardown(() => svc.close());
  const base = staticGroup({ name: 'h', regions: ['r1'], rules: [{ region: 'r1', role: 'edge', min: 0, max: 5, limit: 10 }] });
  const bad: Array<[object, string]> = [
    [{ name: 's', cron: 'every friday', duration: '1h', role: 'edge', min: 1 }, 'schedules[0].cron'],
    [{ name: 's', cron: '0 18 * * FRI', duration: '1h', timezone: 'Mars/Olympus', role: 'edge', min: 1 }, 'schedules[0].timezone'],
    [{ name: 's', cron: '0 18 * * FRI', duration: '10s', role: 'edge', min: 1 }, 'schedules[0].duration'],
    [{ name: 's', cron: '0 18 * * FRI', duration: '1h', role: 'origin', min: 1 }, 'schedules[0].role'],
    [{ name: 's', cron: '0 18 * * FRI', duration: '1h', role: 'edge', region: 'nowhere', min: 1 }, 'schedules[0].region'],
    [{ name: 's', cron: '0 18 * * FRI', duration: '1h', role: 'edge' }, 'schedules[0]'],
  ];
  for (const [schedule, path] of bad) {
    const r = await svc.send('POST', '/as/v1/nodegroups', { ...base, schedules: [schedule] });
    t.is(r.status, 400, JSON.stringify(schedule));
    t.true(
      (r.json as { errors: Array<{ path: string }> }).errors.some((e) => e.path.endsWith(path)),
      `${path}: ${r.text}`,
    );
  }
});
