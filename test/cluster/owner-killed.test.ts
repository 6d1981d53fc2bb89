// kill -9 of the instance that owns a node group, under lookup load (docs/cluster.md): another
// instance serves the group again (lease TTL 2 s here); meanwhile lookups get 503 NOT_READY
// or STORE_UNAVAILABLE with Retry-After, never a hang or a 500; every binding acknowledged before
// the kill is still there, and no stream is bound to two origins. How soon it is served again is
// measured by `npm run bench:cluster` over 10 trials (the 5 s goal), not asserted here: a loaded
// machine stretches it, and a timed assertion would fail for the machine, not the code.
import test from 'ava';
import { request } from '../helpers/http.js';
import { Cluster, clusterConfig, clusterGroup, slowBindings } from '../helpers/cluster.js';
import { LookupLoad, unexpected } from '../helpers/cluster-load.js';
import { until } from '../helpers/until.js';

test('kill -9 of an owner under lookup load: served again by a survivor, only 503s with Retry-After meanwhile, nothing acknowledged lost', async (t) => {
  const config = clusterConfig([slowBindings(clusterGroup('g', 40))], '2s');
  const c = await Cluster.start(t, config);
  await c.ready();
  const token = await c.login(c.instances[0]!);
  await until(
    async () => (await request(c.instances[0]!.url, 'GET', '/as/v1/streams/live/probe/publish?nodeGroup=g', undefined, { authorization: `Bearer ${token}` })).status === 200,
    30_000,
    'an origin in service',
  );

  const ownerId = await c.ownerOf('g');
  t.truthy(ownerId);
  const owner = c.byId(ownerId!);
  const load = new LookupLoad(() => c.running(), token, 'g');
  load.start(4);
  await until(() => load.acknowledged.size >= 50, 30_000, '50 acknowledged bindings');
  const before = new Map(load.acknowledged);

  const killedAt = Date.now();
  await c.kill(owner, 'SIGKILL');
  // Served again: a new stream bound (a write, which only an owner can make) by a survivor.
  await until(() => load.since(killedAt).some((a) => a.status === 200 && a.fresh), 20_000, 'a new binding after the kill');
  const servedAt = load.since(killedAt).find((a) => a.status === 200 && a.fresh)!;
  const handover = servedAt.at + servedAt.ms - killedAt;
  t.log(`kill -9 → a new binding answered by a survivor: ${handover} ms`);
  await until(() => load.since(servedAt.at).filter((a) => a.status === 200).length >= 50, 20_000, 'load served again');
  await load.stop();

  const bad = unexpected(load.answers);
  t.deepEqual(bad.slice(0, 5), [], `${bad.length} unexpected answers`);
  t.deepEqual(load.conflicts, [], 'a stream answered with two origins');
  const refused = load.since(killedAt).filter((a) => a.status === 503).length;
  const ms = load.answers
    .filter((a) => a.status === 200)
    .map((a) => a.ms)
    .sort((x, y) => x - y);
  t.log(`${load.answers.length} lookups (200s: median ${ms[Math.floor(ms.length / 2)]} ms, max ${ms.at(-1)} ms), ${refused} answered 503 with Retry-After after the kill`);

  // Every binding acknowledged before the kill is the same now, through every survivor.
  const newOwner = await c.ownerOf('g');
  t.not(newOwner, ownerId);
  for (const [i, [stream, nodeId]] of [...before].entries()) {
    const via = c.running()[i % c.running().length]!;
    const r = await request(via.url, 'GET', `/as/v1/streams/live/${stream}/publish?nodeGroup=g`, undefined, { authorization: `Bearer ${token}` });
    t.is(r.status, 200, `${stream}: ${r.text}`);
    t.is((r.json as { nodeId: string }).nodeId, nodeId, stream);
  }
});
