// kill -9 of the instance that owns a node group, under lookup load (docs/cluster.md): another
// instance serves the group again (lease TTL 2 s here); meanwhile lookups get 503 NOT_READY
// or STORE_UNAVAILABLE with Retry-After, never a hang or a 500; every binding acknowledged before
// the kill is still there, and no stream is bound to two origins; the events of every commit are in
// the event log once, including a commit whose events the owner never published (made to happen
// for sure: commitWithoutPublishing). How soon it is served again is
// measured by `npm run bench:cluster` over 10 trials (the 5 s goal), not asserted here: a loaded
// machine stretches it, and a timed assertion would fail for the machine, not the code.
import test, { type ExecutionContext } from 'ava';
import { GroupLog } from '../../src/cluster/wal.js';
import { openStore } from '../../src/store/store.js';
import { tempDir } from '../helpers/fixtures.js';
import type { EventBody, EventRecord } from '../../src/domain/events.js';
import { waitForEvents } from '../helpers/events.js';
import { request } from '../helpers/http.js';
import { Cluster, clusterConfig, clusterGroup, slowBindings } from '../helpers/cluster.js';
import { LookupLoad, unexpected } from '../helpers/cluster-load.js';
import { until } from '../helpers/until.js';

test('kill -9 of an owner under lookup load: served again by a survivor, only 503s with Retry-After meanwhile, nothing acknowledged lost, every commit’s events logged once', async (t) => {
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

  // Every binding answered before the kill is in the event log once: the next owner publishes again
  // what the last entries carried, and the stream drops what the owner had already published
  // (docs/cluster.md). A kill rarely falls between a commit and its publication; the next check makes it.
  const answeredBeforeKill = new Set(load.answers.filter((a) => a.status === 200 && a.fresh && a.at + a.ms < killedAt).map((a) => a.stream));
  const bound = (seen: readonly EventRecord[]) => seen.filter((e) => e.type === 'stream.bound' && e.group === 'g').map((e) => (e as { stream: string }).stream);
  const missing = (seen: readonly EventRecord[]) => [...answeredBeforeKill].filter((s) => !bound(seen).includes(s));
  let logged: readonly EventRecord[] = [];
  await waitForEvents(c.running()[0]!.url, token, (seen) => missing((logged = seen)).length === 0).catch(() => {});
  t.deepEqual(missing(logged), [], 'bindings answered before the kill with no stream.bound event in the log');
  const twice = bound(logged).filter((s, i, all) => all.indexOf(s) !== i);
  t.deepEqual(twice, [], 'a binding logged twice');
  // A kill between a commit and the publication of its events, made certain (the window is a
  // few milliseconds): the new owner's events of its last commit are never published.
  const unpublished = await killBetweenCommitAndPublication(t, c, token);
  const withIt = await waitForEvents(c.running()[0]!.url, token, (seen) => bound(seen).includes(unpublished));
  t.deepEqual(
    bound(withIt).filter((s) => s === unpublished),
    [unpublished],
  );
});

/**
 * Every instance is paused (so none appends to the group's log or takes the group over), then a
 * commit is appended to the owner's log as the owner would have (its epoch, at the log's tail),
 * carrying an event the owner never had, so never published; then the owner is killed and the
 * others resumed. Answers the stream that event names.
 */
async function killBetweenCommitAndPublication(t: ExecutionContext, c: Cluster, token: string): Promise<string> {
  const ownerId = (await c.ownerOf('g'))!;
  const owner = c.byId(ownerId);
  const owned = await waitForEvents(c.running()[0]!.url, token, (seen) => seen.some((e) => e.type === 'cluster.owner' && e.group === 'g' && e.owner === ownerId));
  const { epoch } = owned.findLast((e) => e.type === 'cluster.owner' && e.group === 'g' && e.owner === ownerId) as { epoch: number };
  const ghost = await GroupLog.open(c.nats.urls(), 'g', 'test-ghost', epoch, { entries: 1_000_000, intervalMs: 3_600_000 });
  t.teardown(() => ghost.close());
  const copy = openStore(tempDir('switchyard-ghost-'));
  await ghost.catchUp(copy);
  const others = c.running().filter((i) => i !== owner);
  for (const i of [...others, owner]) i.launched!.proc.kill('SIGSTOP');
  // Up to what the owner appended before it stopped (an append it sent just before can land
  // after the first read: read again), then the commit it never published.
  const event: EventBody = { type: 'stream.bound', group: 'g', stream: 'unpublished', origin: 'o-none' };
  for (let attempt = 1; ; attempt++) {
    try {
      await ghost.resync(copy);
      await ghost.append([], [event]);
      break;
    } catch (err) {
      if (attempt === 5) throw err;
    }
  }
  await c.kill(owner, 'SIGKILL');
  for (const i of others) i.launched!.proc.kill('SIGCONT');
  return 'unpublished';
}
