// Endpoint 6 names the edges that carry each stream and the viewers each reported (the
// dashboard's streams view shows them): an edge handed a stream's viewer is listed at once, with
// the viewers its heartbeats then report, and leaves the list when its heartbeat no longer
// carries the stream.
import test from 'ava';
import { allInService } from '../helpers/fake-node.js';
import { body } from '../helpers/http.js';
import { staticGroup, startTestService } from '../helpers/service.js';

interface StreamView {
  name: string;
  subscribers: number;
  edges: Array<{ nodeId: string; region: string; state: string; subscribers: number }>;
}

test('a stream lists the edges that carry it, with their viewers', async (t) => {
  const svc = await startTestService({ groups: [staticGroup({ timing: { nodeTimeout: '5m' } })] });
  t.teardown(() => svc.close());
  const nodes = await allInService(svc, 'g', ['o1', 'o2', 'o3', 'e1', 'e2', 'e3', 't1']);
  const cam = async () => body<StreamView[]>(await svc.get('/as/v1/streams?nodeGroup=g')).find((s) => s.name === 'cam1')!;

  const origin = body<{ nodeId: string }>(await svc.get('/as/v1/streams/live/cam1/publish?nodeGroup=g&region=r1')).nodeId;
  await nodes.get(origin)!.beat({ streams: [{ name: 'cam1', publishing: true }] });
  t.deepEqual((await cam()).edges, [], 'no edge yet');

  const edge = body<{ nodeId: string; region: string }>(await svc.get('/as/v1/streams/live/cam1/subscribe?nodeGroup=g&region=r1'));
  t.deepEqual((await cam()).edges, [{ nodeId: edge.nodeId, region: edge.region, state: 'INSERVICE', subscribers: 0 }], 'handed a viewer, not reported yet');

  await nodes.get(edge.nodeId)!.beat({ subscribers: 4, streams: [{ name: 'cam1', subscribers: 4 }] });
  const live = await cam();
  t.deepEqual(live.edges, [{ nodeId: edge.nodeId, region: edge.region, state: 'INSERVICE', subscribers: 4 }]);
  t.is(live.subscribers, 4);

  await nodes.get(edge.nodeId)!.beat({ streams: [] });
  t.deepEqual((await cam()).edges, [], 'its heartbeat no longer carries the stream');
});
