// An owner paused (SIGSTOP) past its lease, then resumed (SIGCONT), under lookup load
// (docs/cluster.md): another instance takes the group at a later epoch; once it has fenced the
// log, nothing of the old epoch lands after it; the resumed instance stops serving the group and
// forwards; no stream is ever answered with two origins.
import test from 'ava';
import { request } from '../helpers/http.js';
import { Cluster, clusterConfig, clusterGroup, slowBindings } from '../helpers/cluster.js';
import { LookupLoad, unexpected } from '../helpers/cluster-load.js';

import { readLog } from '../helpers/wal-reader.js';
import { until } from '../helpers/until.js';

test('SIGSTOP of an owner past its lease, then SIGCONT: a later epoch owns the group, the old one never writes after it, the resumed instance forwards', async (t) => {
  const c = await Cluster.start(t, clusterConfig([slowBindings(clusterGroup('g', 60))], '2s'));
  await c.ready();
  const token = await c.login(c.instances[0]!);
  const auth = { authorization: `Bearer ${token}` };
  await until(async () => (await request(c.instances[0]!.url, 'GET', '/as/v1/streams/live/probe/publish?nodeGroup=g', undefined, auth)).status === 200, 30_000, 'an origin in service');

  const owner = c.byId((await c.ownerOf('g'))!);
  const others = () => c.running().filter((i) => i !== owner);
  // Load through the others only (a paused instance accepts connections and answers nothing).
  const load = new LookupLoad(others, token, 'g');
  load.start(3);
  // And load straight at the owner, which it holds across the pause.
  const direct = new LookupLoad(() => [owner], token, 'g', 'direct-');
  direct.start(2);
  await until(() => load.acknowledged.size >= 20 && direct.acknowledged.size >= 10, 30_000, 'bindings acknowledged');

  owner.launched!.proc.kill('SIGSTOP');
  const stoppedAt = Date.now();
  await until(
    async () => {
      const o = await c.ownerOf('g', others()[0]);
      return o !== null && o !== owner.id;
    },
    20_000,
    'another owner while the old one is paused',
  );
  await until(() => load.since(Date.now()).length > 0 || load.since(stoppedAt).some((a) => a.status === 200 && a.fresh), 20_000, 'new bindings by the new owner');
  owner.launched!.proc.kill('SIGCONT');

  // The resumed instance answers again, as a forwarder to the new owner.
  const resumed = Date.now();
  await until(() => direct.since(resumed).filter((a) => a.status === 200).length >= 10, 20_000, 'the resumed instance answering');
  await load.stop();
  await direct.stop();
  const newOwner = await c.ownerOf('g', owner);
  t.not(newOwner, owner.id, 'the resumed instance does not own the group');

  const log = await readLog(c.nats.urls(), 'g');
  const epochs = log.filter((e) => e.type === 'epoch');
  t.true(epochs.length >= 2, JSON.stringify(epochs));
  const fence = epochs.at(-1)!;
  t.is(fence.owner, newOwner!);
  const stale = log.filter((e) => e.seq > fence.seq && e.epoch !== fence.epoch);
  t.deepEqual(stale, [], 'entries of an older epoch after the new epoch record');
  t.true(fence.epoch > epochs.at(-2)!.epoch, 'epochs only grow');

  t.deepEqual([...load.conflicts, ...direct.conflicts], [], 'a stream answered with two origins');
  const bad = unexpected([...load.answers, ...direct.answers]);
  t.deepEqual(bad.slice(0, 5), [], `${bad.length} unexpected answers`);
  // Every binding acknowledged by either side is the new owner's too.
  for (const [stream, nodeId] of [...load.acknowledged, ...direct.acknowledged]) {
    const r = await request(others()[0]!.url, 'GET', `/as/v1/streams/live/${stream}/publish?nodeGroup=g`, undefined, auth);
    t.is((r.json as { nodeId?: string }).nodeId, nodeId, `${stream}: ${r.text}`);
  }
});
