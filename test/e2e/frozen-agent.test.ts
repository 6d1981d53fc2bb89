// A node agent frozen with SIGSTOP (issue 6.4): its silence makes it FAULT after nodeTimeout and a
// replacement is made; thawed with SIGCONT, its next heartbeat reinstates it (autoReinstate).
import test from 'ava';
import type { EventRecord } from '../../src/domain/events.js';
import { inService, waitForEvents } from '../helpers/events.js';
import { body } from '../helpers/http.js';
import { startTestService } from '../helpers/service.js';
import { localGroup } from '../helpers/fixtures.js';

const stateOf = (events: readonly EventRecord[], id: string) => {
  let state: string | null | undefined;
  for (const e of events) if (e.type === 'node.state' && e.nodeId === id) state = e.to;
  return state;
};

test('a frozen agent goes FAULT and is replaced; thawed, it is reinstated', async (t) => {
  const svc = await startTestService({
    groups: [
      localGroup({
        name: 'local',
        firstAddress: '127.0.40.2',
        origins: { min: 1, max: 3 },
        edges: null,
        timing: { heartbeatMs: 100, nodeTimeout: '1s', faultTimeout: '1m', autoReinstate: true },
      }),
    ],
  });
  let frozen = 0;
  t.teardown(async () => {
    if (frozen) process.kill(frozen, 'SIGCONT');
    await svc.close();
  });
  let seen = await waitForEvents(svc.url, svc.adminToken, (s) => inService(s).size === 1);
  const [node] = [...inService(seen)];
  const list = body<{ nodeList: Array<{ id: string; platform: { pid?: number } }> }>(await svc.get('/as/v1/nodegroups/local')).nodeList;
  frozen = list.find((n) => n.id === node)!.platform.pid!;
  t.truthy(frozen);

  process.kill(frozen, 'SIGSTOP');
  seen = await waitForEvents(svc.url, svc.adminToken, (s) => stateOf(s, node!) === 'FAULT' && inService(s).size === 1, { since: seen.at(-1)!.seq });
  const fault = seen.find((e) => e.type === 'node.state' && e.nodeId === node && e.to === 'FAULT') as { reason: string };
  t.regex(fault.reason, /no heartbeat/i);
  const replacement = [...inService(seen)][0]!;
  t.not(replacement, node, 'a replacement is in service');
  t.not(body<{ nodeId: string }>(await svc.get('/as/v1/streams/live/cam/publish?nodeGroup=local')).nodeId, node, 'the frozen node is not handed out');

  process.kill(frozen, 'SIGCONT');
  frozen = 0;
  seen = await waitForEvents(svc.url, svc.adminToken, (s) => stateOf(s, node!) === 'INSERVICE', { since: seen.at(-1)!.seq });
  t.true(seen.some((e) => e.type === 'node.state' && e.nodeId === node && e.from === 'FAULT'));
});
