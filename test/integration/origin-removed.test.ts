// A stream outlives its origin's destruction (docs/choosing-nodes.md, docs/nodes.md): with faultTimeout shorter than the
// stream timeouts, the origin of a live stream is killed, goes FAULT and is destroyed; its stream
// stays bound until its own timeouts, viewers are told to retry (503 with Retry-After), and the
// publisher's next lookup moves it (stream.moved). Local nodes: real agents, killed with -9.
import test from 'ava';
import type { EventRecord } from '../../src/domain/events.js';
import { isProblem } from '../helpers/assert.js';
import { waitForEvents } from '../helpers/events.js';
import { body, openSession } from '../helpers/http.js';
import { startTestService } from '../helpers/service.js';
import { localGroup } from '../helpers/fixtures.js';

const GROUP = localGroup({
  name: 'g',
  firstAddress: '127.0.31.2',
  origins: { min: 2, max: 3 },
  edges: { min: 1, max: 1 },
  // Long enough that a second's stall of a loaded machine FAULTs no healthy node (the service runs
  // in the test's process, its nodes beat every 200 ms); the killed origin is FAULT 3 s after its
  // last heartbeat and destroyed 2 s later.
  timing: { nodeTimeout: '3s', faultTimeout: '2s', streamTimeout: '1h', publishTimeout: '1h' },
});

const stateOf = (events: readonly EventRecord[], id: string) => {
  let state: string | null | undefined;
  for (const e of events) if (e.type === 'node.state' && e.nodeId === id) state = e.to;
  return state;
};
const inService = (events: readonly EventRecord[], role: string) =>
  [...new Set(events.filter((e) => e.type === 'node.state' && e.role === role).map((e) => (e as { nodeId: string }).nodeId))].filter((id) => stateOf(events, id) === 'INSERVICE');

test('a live stream whose origin is destroyed after faultTimeout stays bound: viewers retry, the publisher moves it', async (t) => {
  const svc = await startTestService({ groups: [GROUP] });
  t.teardown(() => svc.close());
  const until = (done: (seen: readonly EventRecord[]) => boolean, since = 0) => waitForEvents(svc.url, svc.adminToken, done, { since });

  let seen = await until((s) => inService(s, 'origin').length === 2 && inService(s, 'edge').length === 1);
  const pub = body<{ nodeId: string; url: string }>(await svc.get('/as/v1/streams/live/cam/publish'));
  t.is((await openSession(pub.url)).status, 201);
  seen = await until((s) => s.some((e) => e.type === 'stream.live' && e.stream === 'cam'));

  const nodes = body<{ nodeList: Array<{ id: string; platform: { pid?: number } }> }>(await svc.get('/as/v1/nodegroups/g')).nodeList;
  process.kill(nodes.find((n) => n.id === pub.nodeId)!.platform.pid!, 'SIGKILL');
  seen = await until((s) => stateOf(s, pub.nodeId) === null && inService(s, 'origin').some((id) => id !== pub.nodeId), seen.at(-1)!.seq);
  t.false(
    seen.some((e) => e.type === 'stream.unbound' && e.stream === 'cam'),
    `the destruction of ${pub.nodeId} unbound the stream: ${JSON.stringify(seen.find((e) => e.type === 'stream.unbound'))}`,
  );

  const streams = body<Array<{ name: string; state: string; origin: { nodeId: string; state: string | null } }>>(await svc.get('/as/v1/streams?nodeGroup=g'));
  t.like(
    streams.find((s) => s.name === 'cam'),
    { state: 'LIVE', origin: { nodeId: pub.nodeId, state: null } },
  );
  const viewer = await svc.get('/as/v1/streams/live/cam/subscribe');
  isProblem(t, viewer, 503, 'NO_CAPACITY');
  t.truthy(viewer.headers.get('retry-after'));

  const moved = body<{ nodeId: string }>(await svc.get('/as/v1/streams/live/cam/publish'));
  t.not(moved.nodeId, pub.nodeId);
  await until((s) => s.some((e) => e.type === 'stream.moved' && e.stream === 'cam' && e.from === pub.nodeId && e.to === moved.nodeId), seen.at(-1)!.seq);
  t.is((await svc.get('/as/v1/streams/live/cam/subscribe')).status, 200, 'viewers follow it to its new origin');
});
