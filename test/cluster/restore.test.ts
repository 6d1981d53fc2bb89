// Backing a cluster up (docs/cluster.md, "Backups"): its state lives in JetStream, each instance's
// LMDB being a copy. Streams backed up through the JetStream API (as `nats stream backup` does),
// then every instance stopped, every NATS server's JetStream data and every instance's data
// directory lost, the streams restored into the empty cluster: the instances started again have
// the users, the node groups made through the API, every provision and the event log.
import { mkdirSync, rmSync } from 'node:fs';
import test from 'ava';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { openEventFrames } from '../../src/events/stream-client.js';
import { staticGroup } from '../helpers/fixtures.js';
import { request } from '../helpers/http.js';
import { backupStream, restoreStream, type StreamBackup } from '../helpers/jetstream-backup.js';
import { Cluster, CLUSTER_PASSWORD, clusterConfig } from '../helpers/cluster.js';
import { until } from '../helpers/until.js';

const ladder = (streamName: string) => ({
  streamName,
  region: 'r1',
  streams: [{ name: `${streamName}_360`, level: 1, videoBR: 800000, videoWidth: 640, videoHeight: 360, videoFPS: 30, audioBR: 64000 }],
});

/** What is not state: leases and presence are made afresh by the instances. */
const EPHEMERAL = new Set(['KV_sy_leases', 'KV_sy_instances']);

test('streams backed up, JetStream and every data directory lost, streams restored: the cluster has its state back', async (t) => {
  const c = await Cluster.start(t, clusterConfig([staticGroup({ name: 'g' })]));
  await c.ready();
  const [a, b] = c.instances as [(typeof c.instances)[0], (typeof c.instances)[0]];
  let token = await c.login(a);
  const auth = () => ({ authorization: `Bearer ${token}` });
  const names = Array.from({ length: 30 }, (_, i) => `kept${i}`);
  for (const [i, name] of names.entries()) t.is((await request(c.instances[i % 3]!.url, 'POST', '/as/v1/provision/g', ladder(name), auth())).status, 201, name);
  t.is((await request(b.url, 'POST', '/as/v1/nodegroups', staticGroup({ name: 'api-made' }), auth())).status, 201);
  t.is((await request(a.url, 'POST', '/as/v1/auth/password', { currentPassword: CLUSTER_PASSWORD, newPassword: 'changed-before-the-backup' }, auth())).status, 204);

  // The backup: every stream but leases and presence, while the cluster runs.
  let nc: NatsConnection = await connect({ servers: c.nats.urls() });
  let jsm = await jetstreamManager(nc);
  const streams: string[] = [];
  for await (const name of jsm.streams.names()) if (!EPHEMERAL.has(name)) streams.push(name);
  t.true(
    ['SY_WAL', 'SY_EVENTS', 'KV_sy_meta'].every((s) => streams.includes(s)),
    streams.join(', '),
  );
  const eventsBefore = (await jsm.streams.info('SY_EVENTS')).state.last_seq;
  const backups: StreamBackup[] = [];
  for (const name of streams) backups.push(await backupStream(nc, name));
  t.log(backups.map((x) => `${x.name}: ${x.chunks.reduce((n, ch) => n + ch.length, 0)} bytes`).join(', '));
  await nc.close();

  // Everything lost: instances stopped and their data directories gone, JetStream's data gone.
  for (const i of c.instances) await c.kill(i, 'SIGTERM');
  for (const i of c.instances) rmSync(i.dataDir, { recursive: true, force: true });
  for (const s of c.nats.servers) await c.nats.kill(s, 'SIGTERM');
  for (const s of c.nats.servers) {
    rmSync(s.storeDir, { recursive: true, force: true });
    mkdirSync(s.storeDir, { recursive: true });
  }
  for (const s of c.nats.servers) await c.nats.restart(s, false);
  await c.nats.ready();

  // The restore, into the empty cluster, before any instance starts.
  nc = await connect({ servers: c.nats.urls() });
  jsm = await jetstreamManager(nc);
  for (const x of backups) {
    // A cluster that has just elected its meta leader may not take a restore yet.
    await until(
      async () => {
        await restoreStream(nc, x);
        return true;
      },
      30_000,
      `the restore of ${x.name}`,
    );
  }
  for (const x of backups) t.is((await jsm.streams.info(x.name)).state.messages, (x.state as { messages: number }).messages, `${x.name} restored whole`);
  await nc.close();

  for (const i of c.instances) await c.spawn(i);
  await c.ready(60_000);
  const login = await request(b.url, 'POST', '/as/v1/auth/login', { username: 'admin', password: 'changed-before-the-backup' });
  t.is(login.status, 200, 'the changed password came back');
  token = (login.json as { accessToken: string }).accessToken;
  t.is((await request(a.url, 'GET', '/as/v1/nodegroups/api-made', undefined, auth())).status, 200, 'the group made through the API came back');
  // Every provision, through every instance (the group's new owner replayed its log into an empty LMDB).
  const missing: string[] = [];
  for (const [i, name] of names.entries()) {
    await until(async () => (await request(c.instances[i % 3]!.url, 'GET', `/as/v1/provision/g/${name}`, undefined, auth())).status !== 503, 30_000, `${name} answered`);
    const r = await request(c.instances[i % 3]!.url, 'GET', `/as/v1/provision/g/${name}`, undefined, auth());
    if (r.status !== 200) missing.push(`${name}: ${r.status}`);
  }
  t.deepEqual(missing, []);
  // The event log: what it held before, and the events since (the new owners') numbered after it.
  const controller = new AbortController();
  const ids: number[] = [];
  for await (const f of await openEventFrames(a.url, token, { since: 0, signal: controller.signal })) {
    if (f.id !== undefined) ids.push(f.id);
    if (f.id !== undefined && f.id > eventsBefore) break;
  }
  controller.abort();
  t.is(ids[0], 1, 'the event log from its first event');
  t.true(ids.includes(eventsBefore), 'up to the last event before the backup');
});
