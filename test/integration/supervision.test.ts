// The supervisor over real threads and HTTP, on the static platform: silence past nodeTimeout is
// a FAULT, heartbeats that come back reinstate the node, and a faulty node is never handed out.
import test from 'ava';
import { FakeNode } from '../helpers/fake-node.js';
import { isProblem } from '../helpers/assert.js';
import { waitForEvents } from '../helpers/events.js';
import { rmSync } from 'node:fs';
import { staticGroup, startTestService, tempDir } from '../helpers/service.js';

test('a silent static node goes FAULT, is not handed out, and comes back when it heartbeats again', async (t) => {
  // The lookups just after a heartbeat need the node still in service: 3 s leaves room for a
  // loaded machine (with 600 ms a stalled round trip or two FAULTed it first).
  const svc = await startTestService({ groups: [staticGroup({ nodes: [{ id: 'o1', role: 'origin', region: 'r1' }], timing: { nodeTimeout: '3s' } })] });
  t.teardown(() => svc.close());
  const o1 = new FakeNode(svc, 'g', 'o1');
  await o1.beat();
  t.is((await svc.get('/as/v1/streams/live/cam/publish')).status, 200);
  const faulted = await waitForEvents(svc.url, svc.adminToken, (seen) => seen.some((e) => e.type === 'node.state' && e.nodeId === 'o1' && e.to === 'FAULT'));
  const fault = faulted.find((e) => e.type === 'node.state' && e.to === 'FAULT') as { reason?: string };
  t.regex(fault.reason ?? '', /no heartbeat for/);
  isProblem(t, await svc.get('/as/v1/streams/live/other/publish'), 503, 'NO_CAPACITY');
  isProblem(t, await svc.get('/as/v1/streams/live/cam/subscribe'), 503, 'NO_CAPACITY');
  await o1.beat();
  const back = await waitForEvents(svc.url, svc.adminToken, (seen) => seen.some((e) => e.type === 'node.state' && e.nodeId === 'o1' && e.from === 'FAULT' && e.to === 'INSERVICE'), {
    since: faulted.at(-1)!.seq,
  });
  t.truthy(back.length);
  t.is((await svc.get('/as/v1/streams/live/cam/publish')).status, 200);
});

test('static nodes removed from the config are retired; those added appear', async (t) => {
  const dataDir = tempDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const svc = await startTestService({
    dataDir,
    groups: [
      staticGroup({
        nodes: [
          { id: 'keep', role: 'origin', region: 'r1' },
          { id: 'gone', role: 'origin', region: 'r1' },
        ],
      }),
    ],
  });
  await svc.close({ stopNodes: false });
  const again = await startTestService({
    dataDir,
    groups: [
      staticGroup({
        nodes: [
          { id: 'keep', role: 'origin', region: 'r1' },
          { id: 'new', role: 'origin', region: 'r1' },
        ],
      }),
    ],
  });
  t.teardown(() => again.close());
  const seen = await waitForEvents(again.url, again.adminToken, (s) => s.some((e) => e.type === 'node.state' && e.nodeId === 'gone' && e.to === null));
  t.true(seen.some((e) => e.type === 'node.state' && e.nodeId === 'new' && e.to === 'CREATED'));
});
