// Snapshots and compaction of a node group's log on a real 3-server NATS cluster (docs/cluster.md):
// 20 000 bindings written through the owner (the lookups of an event-loop turn are one commit of
// its actor; commits that queue behind an append share the next log entry); the group's subject in
// SY_WAL stays bounded by the snapshot interval throughout (sampled), several snapshots are
// published; then kill -9 of the owner, and every acknowledged binding is there, through the
// instance that took the group over; then the killed instance comes back with its LMDB copy lost
// and the two others are killed: it can only have the group from the snapshot (the log before it
// is gone), and every binding is there again. How fast a group is taken over is measured by
// `npm run bench:cluster` (its history axis), not asserted here.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { Cluster, clusterConfig, clusterGroup, slowBindings, type Instance } from '../helpers/cluster.js';
import { request } from '../helpers/http.js';

import { readLog } from '../helpers/wal-reader.js';
import { until } from '../helpers/until.js';

/** Bindings written (one lookup each); the log compacts every SNAPSHOT_ENTRIES entries. */
const BINDINGS = Number(process.env.SNAPSHOT_TEST_BINDINGS ?? 10_000);
const SNAPSHOT_ENTRIES = 250;
/**
 * Lookups in flight at once. The owner commits a turn's lookups as one log entry, so a batch holds
 * at most this many: 10 000 bindings make at least 625 entries, more than two snapshot intervals
 * however fast the machine batches (at 48, a quiet run made 1 849 entries of 20 000 bindings and
 * failed a check that asked for four intervals of 500).
 */
const CONCURRENCY = 16;

/** A group on this test's loopback range, whose PENDING bindings stay, with room for every one. */
function group() {
  const g = slowBindings(clusterGroup('g', 0));
  return {
    ...g,
    platform: { type: 'local', local: { firstAddress: '127.2.1.2', port: 0 } },
    rules: g.rules.map((r) => ({ ...r, limit: 1e12 })),
    limits: { pendingBindings: 10_000_000, pendingPerToken: 10_000_000 },
  };
}

/** `n` publish lookups of new streams at `url`, `concurrency` at a time: stream → origin of each acknowledged. */
async function bind(url: string, token: string, n: number, concurrency: number): Promise<Map<string, string>> {
  const acknowledged = new Map<string, string>();
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const stream = `s${next++}`;
      for (let attempt = 0; attempt < 5; attempt++) {
        const r = await fetch(`${url}/as/v1/streams/live/${stream}/publish?nodeGroup=g`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(15_000) });
        const body = (await r.json()) as { nodeId?: string };
        if (r.status === 200 && body.nodeId) {
          acknowledged.set(stream, body.nodeId);
          break;
        }
        // 503 with Retry-After while a snapshot or an election holds the log: again.
        if (r.status !== 503) throw new Error(`${stream}: ${r.status} ${JSON.stringify(body)}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return acknowledged;
}

test('a long run of commits: the log stays bounded by the snapshot interval, snapshots are published, and after kill -9 of the owner every acknowledged binding is there', async (t) => {
  const base = clusterConfig([group()], '2s');
  const config = { ...base, cluster: { ...base.cluster, snapshotEntries: SNAPSHOT_ENTRIES }, limits: { lookups: { admin: { perSecond: 0, burst: 1 } } } };
  const c = await Cluster.start(t, config);
  await c.ready();
  // Ownership as it stays: a group first taken by an instance that does not rank first for it is
  // handed over calmly 10 × TTL later, which would fall inside this test.
  await c.settled(['g']);
  const token = await c.login(c.instances[0]!);
  const auth = { authorization: `Bearer ${token}` };
  await until(async () => (await request(c.instances[0]!.url, 'GET', '/as/v1/streams/live/probe/publish?nodeGroup=g', undefined, auth)).status === 200, 30_000, 'an origin in service');
  const ownerId = (await c.ownerOf('g'))!;
  const owner = c.byId(ownerId);

  // The subject's message count and the published snapshot, sampled while the commits go in.
  const nc = await connect({ servers: c.nats.urls() });
  t.teardown(() => nc.close());
  const jsm = await jetstreamManager(nc);
  const manifests = await new Kvm(nc).open('sy_snap');
  const counts: number[] = [];
  const published = new Set<number>();
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      // The group is the stream's only subject.
      const info = await jsm.streams.info('SY_WAL').catch(() => null);
      if (info) counts.push(info.state.messages);
      const m = await manifests.get('g').catch(() => null);
      const seq = m?.operation === 'PUT' ? m.json<{ snap: { seq: number } | null }>().snap?.seq : undefined;
      if (seq) published.add(seq);
      await new Promise((r) => setTimeout(r, 250));
    }
  })();

  const acknowledged = await bind(owner.url, token, BINDINGS, CONCURRENCY);
  sampling = false;
  await sampler;
  const wal = await jsm.streams.info('SY_WAL');
  const entries = wal.state.last_seq;
  t.log(`${acknowledged.size} bindings in ${entries} log entries; the subject held at most ${Math.max(...counts)} messages (${counts.length} samples); ${published.size} snapshots seen published`);
  t.is(acknowledged.size, BINDINGS);
  t.true(entries > 2 * SNAPSHOT_ENTRIES, `compaction exercised: ${entries} entries for snapshots every ${SNAPSHOT_ENTRIES}`);
  t.true(published.size >= 3, `${published.size} snapshots seen published`);
  // The log held one interval, plus what came while a snapshot was written: never the history.
  t.true(Math.max(...counts) <= 2 * SNAPSHOT_ENTRIES, `the subject held up to ${Math.max(...counts)} messages`);

  // What the last snapshot weighed and took (the owner's metrics), for docs/cluster.md's sizing.
  const last = (await manifests.get('g'))?.json<{ snap: { records: number; bytes: number; chunks: number } }>().snap;
  const metrics = (await request(owner.url, 'GET', '/as/v1/metrics')).text;
  const seconds = /switchyard_cluster_snapshot_seconds\{group="g"\} ([0-9.e-]+)/.exec(metrics)?.[1];
  t.regex(metrics, /switchyard_cluster_snapshots_total\{group="g"\} [1-9]/);
  const standbys = await Promise.all(c.running().map(async (i) => /switchyard_cluster_standby_groups (\d+)/.exec((await request(i.url, 'GET', '/as/v1/metrics')).text)?.[1]));
  t.deepEqual(standbys.map(Number).sort(), [0, 0, 1], 'one instance keeps a warm copy of the group: the one next in line');
  t.log(
    `last snapshot: ${last?.records} records, ${last?.bytes} bytes in ${last?.chunks} chunks (${Math.round((last?.bytes ?? 0) / (last?.records || 1))} bytes a record), written and published in ${seconds} s`,
  );

  await c.kill(owner, 'SIGKILL');
  await until(
    async () => {
      const r = await request(c.running()[0]!.url, 'GET', '/as/v1/streams/live/after-kill/publish?nodeGroup=g', undefined, auth);
      return r.status === 200;
    },
    60_000,
    'the group served again',
  );
  const newOwner = await c.ownerOf('g');
  t.truthy(newOwner);
  t.not(newOwner, ownerId);

  // Every acknowledged binding, listed by the new owner (through any survivor), with its origin.
  const missing = async (via: Instance) => {
    const listed = await streams(via, auth);
    return [...acknowledged].filter(([stream, origin]) => listed.get(stream) !== origin);
  };
  const lost = await missing(c.running()[0]!);
  t.deepEqual(lost.slice(0, 5), [], `${lost.length} of ${acknowledged.size} acknowledged bindings missing or moved`);

  // The new owner fenced the compacted log: its epoch record, and only its own entries after it.
  const log = await readLog(c.nats.urls(), 'g');
  const record = log.findLast((e) => e.type === 'epoch' && e.owner === newOwner);
  t.truthy(record, 'the new owner appended its epoch record');
  t.deepEqual(
    log.filter((e) => e.seq > record!.seq && e.epoch !== record!.epoch),
    [],
  );

  // The killed instance comes back without its copy; the others go: the snapshot is all it can have.
  for (const f of ['switchyard.mdb', 'switchyard.mdb-lock']) rmSync(join(owner.dataDir, f), { force: true });
  await c.spawn(owner);
  for (const i of c.running().filter((x) => x !== owner)) await c.kill(i, 'SIGKILL');
  await until(
    async () => (await request(owner.url, 'GET', '/as/v1/streams/live/from-snapshot/publish?nodeGroup=g', undefined, auth)).status === 200,
    60_000,
    'the group served by the instance that lost its copy',
  );
  const lostAgain = await missing(owner);
  t.deepEqual(lostAgain.slice(0, 5), [], `${lostAgain.length} of ${acknowledged.size} acknowledged bindings missing or moved, from the snapshot`);
});

/** Every stream of group g, listed through `via`, with its origin. */
async function streams(via: Instance, auth: Record<string, string>): Promise<Map<string, string>> {
  const listed = new Map<string, string>();
  let after: string | undefined;
  for (;;) {
    const q = after ? `&after=${encodeURIComponent(after)}` : '';
    const r = await request(via.url, 'GET', `/as/v1/streams?nodeGroup=g&limit=1000${q}`, undefined, auth);
    if (r.status !== 200) throw new Error(`listing streams through ${via.id}: ${r.status} ${r.text}`);
    const page = r.json as Array<{ name: string; origin: { nodeId: string } }>;
    for (const s of page) listed.set(s.name, s.origin.nodeId);
    if (page.length < 1000) return listed;
    after = `g/${page.at(-1)!.name}`;
  }
}
