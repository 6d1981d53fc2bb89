// End to end on the local platform: the service as a process, node agents as processes, load
// from simulated sessions opened on the nodes themselves, then kill -9 and a restart.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import type { EventRecord } from '../../src/domain/events.js';
import { inService, waitForEvents } from '../helpers/events.js';
import { body, request } from '../helpers/http.js';
import { OwnService } from '../helpers/process.js';
import { until } from '../helpers/until.js';
import { localGroup } from '../helpers/fixtures.js';

const CONFIG = {
  server: { host: '127.0.0.1', port: 0 },
  supervisorTick: '200ms',
  nodeGroups: [
    {
      ...localGroup({
        firstAddress: '127.0.10.2',
        regions: [
          { name: 'here', lat: 50, lon: 8 },
          { name: 'there', lat: 39, lon: -77 },
        ],
        origins: { min: 2, max: 3 },
        timing: { nodeTimeout: '3s' },
      }),
      // This test loads an origin with sessions opened on the node itself, beside any lookup:
      // only a group that admits anyone takes them (admission is tested in admission.test.ts).
      admission: { enabled: false },
    },
  ],
};

interface NodeInfo {
  id: string;
  role: string;
  state: string;
  address: string;
  load: number;
  connections: { publisher: number; subscriber: number };
}

test('local nodes carry real load, choices follow it, and a kill -9 loses nothing acknowledged', async (t) => {
  const own = await OwnService.start(t, CONFIG);
  let svc = own.process;
  let token = await own.login();
  const get = (path: string) => request(svc.url, 'GET', path, undefined, { authorization: `Bearer ${token}` });

  // Three agents start and come into service on their own loopback addresses.
  const events = await waitForEvents(svc.url, token, (seen) => inService(seen).size >= 3);
  const ids = inService(events);
  const nodes = async () => body<{ nodeList: NodeInfo[] }>(await get('/as/v1/nodegroups/default')).nodeList;
  const list = await nodes();
  const origins = list.filter((n) => n.role === 'origin');
  t.is(origins.length, 2);
  t.true(
    list.every((n) => /^127\.0\.10\.\d+$/.test(n.address)),
    'each node on its own loopback address',
  );
  t.is(new Set(list.map((n) => n.address)).size, list.length);

  // Publish lookup, then load that origin with sessions opened on the node itself.
  const first = body<{ nodeId: string; serverAddress: string; port: number; protocol: string }>(await get('/as/v1/streams/live/cam1/publish'));
  t.is(first.protocol, 'http');
  const node = `http://${first.serverAddress}:${first.port}`;
  for (const stream of ['cam1', 'extra1', 'extra2']) t.is((await request(node, 'POST', `/live/${stream}/publish`)).status, 201);
  await until(async () => (await nodes()).find((n) => n.id === first.nodeId)?.connections.publisher === 3, 10_000, 'the origin to report its three publishers');
  // The next new stream goes to the other, less loaded origin.
  const second = body<{ nodeId: string }>(await get('/as/v1/streams/live/cam2/publish'));
  t.not(second.nodeId, first.nodeId);
  t.true(ids.has(second.nodeId));

  // The published stream turns LIVE; a viewer gets the edge under its origin and is counted.
  await until(async () => body<Array<{ name: string; state: string }>>(await get('/as/v1/streams')).find((s) => s.name === 'cam1')?.state === 'LIVE', 10_000, 'cam1 to turn LIVE');
  const edge = body<{ nodeId: string; serverAddress: string; port: number; role: string }>(await get('/as/v1/streams/live/cam1/subscribe'));
  t.is(edge.role, 'edge');
  t.is((await request(`http://${edge.serverAddress}:${edge.port}`, 'POST', '/live/cam1/subscribe')).status, 201);
  await until(async () => body<Array<{ name: string; subscribers: number }>>(await get('/as/v1/streams')).find((s) => s.name === 'cam1')?.subscribers === 1, 10_000, 'the viewer to be counted');

  const ladder = { streamName: 'show', region: 'here', streams: [{ name: 'show_1', level: 1, videoBR: 1_000_000, videoWidth: 640, videoHeight: 360, videoFPS: 30, audioBR: 64_000 }] };
  t.is((await request(svc.url, 'POST', '/as/v1/provision/default', ladder, { authorization: `Bearer ${token}` })).status, 201);

  // kill -9: no chance to flush or to stop anything.
  svc.proc.kill('SIGKILL');
  await svc.exited;

  svc = await own.spawn();
  token = await own.login();
  const provisions = body<Array<{ streamName: string }>>(await get('/as/v1/provision/default'));
  t.deepEqual(
    provisions.map((p) => p.streamName),
    ['show'],
  );
  const streams = body<Array<{ name: string; origin: { nodeId: string } }>>(await get('/as/v1/streams'));
  t.is(streams.find((s) => s.name === 'cam1')?.origin.nodeId, first.nodeId);
  t.is(streams.find((s) => s.name === 'cam2')?.origin.nodeId, second.nodeId);
  // The agents kept running and are recognised by their heartbeats: the same nodes, in service.
  await until(
    async () => {
      const after = await nodes();
      return after.length === 3 && after.every((n) => ids.has(n.id) && n.state === 'INSERVICE' && n.connections !== undefined);
    },
    // A bound, not a measure: agents reconnect with backoff, slower on a loaded machine.
    30_000,
    'the same three nodes back in service',
  );
  t.is(body<{ nodeId: string }>(await get('/as/v1/streams/live/cam1/publish')).nodeId, first.nodeId, 'the publisher still lands where it was');

  // A clean stop stops the agents it started.
  svc.proc.kill('SIGTERM');
  t.is(await svc.exited, 0);
  const leftovers = readdirSync('/proc').filter((p) => {
    if (!/^\d+$/.test(p)) return false;
    try {
      return readFileSync(`/proc/${p}/environ`, 'utf8').includes(`SWITCHYARD_NODE_DIR=${own.dataDir}`);
    } catch {
      return false;
    }
  });
  t.deepEqual(leftovers, []);
});

test('a node agent killed with -9 goes FAULT after nodeTimeout and is replaced', async (t) => {
  const svc = await OwnService.start(t, CONFIG);
  const token = await svc.login();
  const up = await waitForEvents(svc.url, token, (seen) => inService(seen).size >= 3);
  const edge = [...inService(up)].find((id) => up.some((e) => e.type === 'node.state' && e.nodeId === id && e.role === 'edge'))!;
  const pid = Number(readFileSync(`/proc/${findAgentPid(svc.dataDir, edge)}/stat`, 'utf8').split(' ')[0]);
  process.kill(pid, 'SIGKILL');
  const after = await waitForEvents(
    svc.url,
    token,
    (seen: readonly EventRecord[]) => {
      const faulted = seen.some((e) => e.type === 'node.state' && e.nodeId === edge && e.to === 'FAULT');
      const replacement = [...inService(seen)].some((id) => id !== edge && seen.some((e) => e.type === 'node.state' && e.nodeId === id && e.role === 'edge' && e.from === null));
      return faulted && replacement;
    },
    { since: up.at(-1)!.seq, timeoutMs: 20_000 },
  );
  const fault = after.find((e) => e.type === 'node.state' && e.nodeId === edge && e.to === 'FAULT');
  t.regex((fault as { reason?: string }).reason ?? '', /no heartbeat/);
});

function findAgentPid(dataDir: string, nodeId: string): string {
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      if (readFileSync(`/proc/${p}/environ`, 'utf8').includes(`SWITCHYARD_NODE_DIR=${join(dataDir, 'nodes', nodeId)}`)) return p;
    } catch {
      /* not ours */
    }
  }
  throw new Error(`no agent process for ${nodeId}`);
}
