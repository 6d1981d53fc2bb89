// A refused write makes a group actor start again from the store, but only once every commit it
// had already handed over has settled: a commit still in flight then is acknowledged, and must be
// in memory afterwards. (Before, the actor reloaded at once, from a store that did not hold that
// commit yet: the provision was created, answered 201, and read back 404 until the next restart.)
// A real tmpfs (needs root, as store-faults.test.ts), filled below the reserve while a commit
// waits for LMDB's write lock, which another process holds.
import { execFileSync, fork } from 'node:child_process';
import { rmSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { MIN_FREE_FLOOR } from '../../src/domain/disk.js';
import { projectPath } from '../../src/paths.js';
import { isProblem } from '../helpers/assert.js';
import { allInService } from '../helpers/fake-node.js';
import { staticGroup, startTestService } from '../helpers/service.js';
import { tmpfs } from '../helpers/tmpfs.js';
import { ladder } from '../helpers/fixtures.js';

test('a write refused while another commit is in flight does not make the actor forget that commit once it lands', async (t) => {
  const mount = tmpfs(t, 'size=48m');
  const dataDir = join(mount, 'data');
  const svc = await startTestService({ dataDir, config: { minFreeBytes: MIN_FREE_FLOOR }, groups: [staticGroup({ nodes: [{ id: 'o1', role: 'origin', region: 'r1' }] })] });
  t.teardown(() => svc.close());
  await allInService(svc, 'g', ['o1']);
  // A provision of the same shape first (see holdWrites), acknowledged: everything before it is in.
  t.is((await svc.send('POST', '/as/v1/provision/g', ladder('warm'))).status, 201);

  const holder = fork(projectPath('dist', 'test', 'helpers', 'hold-child.js'), [dataDir]);
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    holder.send('release');
    return new Promise((resolve) => holder.once('exit', resolve));
  };
  t.teardown(release);
  await new Promise((resolve) => holder.once('message', resolve));

  // In flight: decided, in the actor's memory, its commit waiting for the lock.
  const first = svc.send('POST', '/as/v1/provision/g', ladder('first'));
  const provisions = async () => ((await svc.get('/as/v1/nodegroups')).json as Array<{ name: string; provisions: number }>).find((g) => g.name === 'g')!.provisions;
  for (let i = 0; i < 2000 && (await provisions()) < 2; i++);
  t.is(await provisions(), 2);

  // The disk fills below the reserve (with room left for the commit in flight): the next write is refused.
  const fill = join(mount, 'fill');
  const { bavail, bsize } = statfsSync(mount);
  execFileSync('sh', ['-c', `dd if=/dev/zero of=${fill} bs=1M count=${Math.floor((bavail * bsize - 8 * 2 ** 20) / 2 ** 20)} 2>/dev/null`]);
  isProblem(t, await svc.send('POST', '/as/v1/provision/g', ladder('refused')), 503, 'STORE_UNAVAILABLE');
  rmSync(fill);

  await release();
  t.is((await first).status, 201, 'the commit in flight landed and was acknowledged');
  t.is((await svc.get('/as/v1/provision/g/first')).status, 200, 'and the actor still knows it');
  t.is((await svc.get('/as/v1/provision/g/refused')).status, 404);
});
