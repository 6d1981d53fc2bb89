// Event ids never repeat, across a kill -9 too, and a client that resumes with Last-Event-ID never
// silently skips an event (docs/persistence.md). The test holds LMDB's write lock, makes the service emit an
// event, kills it while that event's log write waits, restarts it and resumes. On the code before
// this rule the event had already gone out with the next id; after the restart that id named
// another event, which the resuming client took for one it had seen.
import test from 'ava';
import { TokenSigner } from '../../src/auth/tokens.js';
import type { EventFrame } from '../../src/events/stream-client.js';
import { follow } from '../helpers/follow.js';
import { holdWrites } from '../helpers/hold-writes.js';
import { request } from '../helpers/http.js';
import { OwnService } from '../helpers/process.js';

const SECRET = 'event-ids-test-secret-at-least-32-bytes';

const CONFIG = {
  server: { host: '127.0.0.1', port: 0 },
  geoip: { enabled: false },
  nodeGroups: [
    {
      name: 'g',
      platform: { type: 'static', static: { nodes: [{ id: 'o1', role: 'origin', region: 'r1', address: '10.0.0.1' }] } },
      // Regions without nodes: a strict lookup there finds no room, and says so in an event
      // (scaling.request) without writing anything of its own.
      regions: ['r1', 'r2', 'r3', 'r4'].map((name, i) => ({ name, lat: 10 * i, lon: 0 })),
      roles: { origin: {} },
      rules: ['r1', 'r2', 'r3', 'r4'].map((region) => ({ region, role: 'origin', min: 0, max: 2, limit: 10 })),
      timing: { heartbeatMs: 1000, nodeTimeout: '1h' },
    },
  ],
};

const noRoomIn = (region: string) => (f: EventFrame) => f.event.type === 'scaling.request' && f.event.region === region;

test('an event goes out only once logged: after a kill -9, ids go on above every id sent and a resuming client gets every event', async (t) => {
  const own = await OwnService.start(t, CONFIG, { SWITCHYARD_JWT_SECRET: SECRET });
  let token = await own.login();
  const signer = new TokenSigner(Buffer.from(SECRET));
  const get = (path: string) => request(own.url, 'GET', path, undefined, { authorization: `Bearer ${token}` });
  t.is((await request(own.url, 'POST', '/as/v1/nodes/o1/events', { ready: true, metrics: {}, streams: [] }, { authorization: `Bearer ${signer.nodeToken('g', 'o1', 3_600_000)}` })).status, 200);
  const noRoom = async (stream: string, region: string) => t.is((await get(`/as/v1/streams/live/${stream}/publish?region=${region}&strict=true`)).status, 503);

  const first = follow(own.url, token);
  t.teardown(() => first.close());
  await noRoom('before', 'r2');
  await first.until(noRoomIn('r2'));

  const hold = holdWrites(own.dataDir);
  let released = false;
  t.teardown(() => (released ? undefined : hold.release()));
  await noRoom('held', 'r3');
  // The event is appended: sent at once (the old code), or waiting for its log write.
  const waiting = async () => Number(/^switchyard_events_waiting_for_store (\d+)$/m.exec((await request(own.url, 'GET', '/as/v1/metrics')).text)?.[1] ?? 0);
  for (let i = 0; i < 2000 && !first.frames.some(noRoomIn('r3')) && (await waiting()) === 0; i++);
  const seen = new Map(first.frames.filter((f) => f.id !== undefined).map((f) => [f.id!, f.event]));
  const resumeFrom = first.lastId!;
  t.log(`before the kill: the client saw ids up to ${resumeFrom}; the held event ${first.frames.some(noRoomIn('r3')) ? 'was sent' : 'was not sent'}`);

  own.process.proc.kill('SIGKILL');
  await own.process.exited;
  await first.close();
  released = true;
  await hold.release();

  await own.spawn();
  token = await own.login();
  await noRoom('after', 'r4');
  const resumed = follow(own.url, token, resumeFrom);
  t.teardown(() => resumed.close());
  await noRoom('end', 'r2');
  await resumed.until((f) => noRoomIn('r2')(f) && (f.event as { reason: string }).reason.includes("'end'"));
  t.true(resumed.frames.some(noRoomIn('r4')), `resuming from ${resumeFrom} skipped the event of the restarted service: got ${resumed.frames.map((f) => `${f.id}:${f.event.type}`).join(', ')}`);

  // Every id the client saw still names what it saw.
  const log = follow(own.url, token);
  t.teardown(() => log.close());
  await log.until((f) => f.id === resumed.lastId);
  const logged = new Map(log.frames.map((f) => [f.id!, f.event]));
  for (const [id, event] of seen) {
    t.deepEqual(logged.get(id), event, `id ${id} names another event after the crash`);
  }
  const ids = log.frames.map((f) => f.id!);
  t.deepEqual(
    ids,
    [...ids].sort((a, b) => a - b),
    'ids only grow',
  );
  t.is(new Set(ids).size, ids.length, 'no id twice');
});
