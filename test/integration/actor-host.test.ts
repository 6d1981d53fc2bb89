// The front end's handle on a node-group actor: what a call leaves behind once answered, and
// what happens to calls in flight when the actor's thread dies.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import test from 'ava';
import { ActorHost } from '../../actors/host.js';
import type { NodeGroup } from '../../src/config/types.js';
import type { EventBody } from '../../src/domain/events.js';
import { parsedGroup } from '../helpers/fixtures.js';
import { hostOf, staticGroup, tempDir } from '../helpers/service.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const group: NodeGroup = parsedGroup(staticGroup({ name: 'g' }));

async function started(t: import('ava').ExecutionContext, preloaded = false) {
  const h = await hostOf(t, tempDir('switchyard-host-'), [group], () => {}, preloaded);
  const g = h.group('g')!;
  await g.call(
    'addNodes',
    group.platform.static.nodes.map((n) => ({ id: n.id, role: n.role, region: n.region, platform: { type: 'static' as const, address: n.address }, state: 'CREATED' as const })),
    Date.now(),
  );
  return g;
}

test('an answered call leaves nothing behind: the heap stays flat over many calls', async (t) => {
  const g = await started(t);
  // Each answer is a few KiB (seven node views); kept answers would show as tens of MiB.
  const calls = async (n: number) => {
    for (let i = 0; i < n; i++) await g.call('detail', undefined, 100);
  };
  await calls(2000);
  gc();
  const before = process.memoryUsage().heapUsed;
  await calls(20_000);
  gc();
  const grown = process.memoryUsage().heapUsed - before;
  t.true(grown < 4 * 2 ** 20, `the heap grew by ${(grown / 2 ** 20).toFixed(1)} MiB over 20,000 answered calls`);
});

for (const [thread, preloaded] of [
  ['a thread started for it', false],
  ['a thread started early', true],
] as const)
  test(`calls in flight when the actor thread dies fail as unavailable, and so do calls made before it is back (${thread})`, async (t) => {
    const g = await started(t, preloaded);
    const inFlight = Array.from({ length: 50 }, () => g.call('detail', undefined, 100));
    await g.crash();
    // Whether a call is answered before the thread ends is the machine's timing: each one settles,
    // answered or failed as unavailable, never hanging (test/unit/in-flight.test.ts fails the
    // unanswered ones deterministically).
    const settled = await Promise.allSettled(inFlight);
    for (const s of settled) {
      if (s.status === 'rejected') t.is((s.reason as Error).name, 'ActorUnavailable');
      else t.is((s.value as { name: string }).name, 'g');
    }
    await t.throwsAsync(() => g.call('counts'), { name: 'ActorUnavailable' });
  });

test('a group whose first start fails is listed, and its thread is started again until it comes up', async (t) => {
  // A data directory that is a file: the actor cannot open its store until the operator fixes it.
  const root = tempDir('switchyard-host-');
  const dir = `${root}/data`;
  writeFileSync(dir, 'not a directory');
  const seen: EventBody[] = [];
  let restarted!: () => void;
  const up = new Promise<void>((resolve) => (restarted = resolve));
  const h = new ActorHost({
    dataDir: dir,
    durability: 'commit',
    onEvents: (events) => {
      seen.push(...events);
      if (events.some((e) => e.type === 'actor.restarted')) restarted();
    },
  });
  t.teardown(async () => {
    await h.stop(false);
    rmSync(root, { recursive: true, force: true });
  });
  await t.throwsAsync(() => h.addGroup(group));
  const g = h.group('g');
  t.truthy(g, 'listed although its actor is not up');
  await t.throwsAsync(() => g!.call('counts'), { name: 'ActorUnavailable' });
  rmSync(dir);
  mkdirSync(dir);
  await up;
  const crashed = seen.find((e) => e.type === 'actor.crashed' && e.group === 'g') as { reason: string } | undefined;
  t.regex(crashed?.reason ?? '', /^the actor did not start: .*(EEXIST|ENOTDIR)/, 'the cause, not the exit code of the thread it ended');
  t.deepEqual((await g!.call('counts')).nodes, []);
});

test('a group still starting when the host stops is stopped with the others, not left running unlisted', async (t) => {
  const dir = tempDir('switchyard-host-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const h = new ActorHost({ dataDir: dir, durability: 'commit', onEvents: () => {} });
  const adding = h.addGroup(group);
  await h.stop(false);
  // Its thread was ended under it: the start fails instead of leaving a worker no one stops.
  await t.throwsAsync(adding, { name: 'ActorUnavailable' });
  t.is(h.group('g'), undefined);
});
