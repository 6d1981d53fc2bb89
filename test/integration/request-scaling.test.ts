// A lookup that finds no room scales its rule out (docs/scaling.md): the ask stays with the group's
// planner (src/model/planner.ts) and wakes the supervisor, which creates a node; the cooldown and
// the lookups' budget are kept with the group's records, so a restart of the service does not
// spend the budget again. Local simulated nodes on 127.1.81.x.
import test from 'ava';
import type { EventRecord } from '../../src/domain/events.js';
import { inService, waitForEvents } from '../helpers/events.js';
import { staticGroup, startTestService, tempDir } from '../helpers/service.js';
import { rmSync } from 'node:fs';

const group = {
  ...staticGroup({
    name: 'g',
    regions: ['r1'],
    // One publisher per origin; lookups may add one origin per (long) cooldown.
    rules: [{ region: 'r1', role: 'origin', min: 1, max: 4, limit: 1, cooldown: '1h', requestBudget: 1 }],
  }),
  platform: { type: 'local', local: { firstAddress: '127.1.81.2', port: 0 } },
};

const publish = (svc: { get(path: string): Promise<{ status: number }> }, stream: string) => svc.get(`/as/v1/streams/live/${stream}/publish?nodeGroup=g`);

test('no room: the lookup asks, an origin is made for it once per budget, and a restart keeps the budget spent', async (t) => {
  const dataDir = tempDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  let svc = await startTestService({ groups: [group], dataDir });
  t.teardown(() => svc.close());
  await waitForEvents(svc.url, svc.adminToken, (s) => inService(s).size >= 1, { timeoutMs: 30_000 });
  t.is((await publish(svc, 'first')).status, 200);
  t.is((await publish(svc, 'second')).status, 503, 'the one origin is full');
  const made = await waitForEvents(svc.url, svc.adminToken, (s) => inService(s).size >= 2, { timeoutMs: 30_000 });
  const actions = made.filter((e): e is Extract<EventRecord, { type: 'scaling.action' }> => e.type === 'scaling.action');
  t.deepEqual(
    actions.map((a) => [a.action, a.role, a.count, a.trigger]),
    [
      ['create', 'origin', 1, 'min'],
      ['create', 'origin', 1, 'request'],
    ],
  );
  t.is((await publish(svc, 'second')).status, 200, 'the new origin takes it');

  // A restart (its nodes go with it, and the min brings one back): the memory is read from LMDB.
  const since = made.at(-1)!.seq;
  await svc.close();
  svc = await startTestService({ groups: [group], dataDir });
  await waitForEvents(svc.url, svc.adminToken, (s) => inService(s).size >= 1, { timeoutMs: 30_000, since });
  let refused = 0;
  for (let i = 0; i < 5 && refused === 0; i++) if ((await publish(svc, `after-${i}`)).status === 503) refused++;
  t.is(refused, 1, 'the one origin fills up');
  // The budget of the cooldown was spent before the restart: the rule is blocked, nothing is made.
  const after = await waitForEvents(svc.url, svc.adminToken, (s) => s.some((e) => e.type === 'scaling.blocked'), { timeoutMs: 30_000, since });
  t.like(
    after.find((e) => e.type === 'scaling.blocked'),
    { role: 'origin', region: 'r1', cause: 'budget' },
  );
  t.false(
    after.some((e) => e.type === 'scaling.action' && e.trigger === 'request'),
    'no second origin for lookups within the cooldown',
  );
});
