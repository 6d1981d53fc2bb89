// A data directory that fills up, on a real (small) tmpfs: writes are refused with a clear 503,
// reads go on, events say so, and writes work again once there is room. (This needs root, as the
// CI machine runs. A read-only remount cannot be made while LMDB holds its file open for writing;
// it fails the same way, EROFS instead of ENOSPC, through the same path: the guard's probe is
// checked here on a file system mounted read-only.)
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { MIN_FREE_FLOOR } from '../../src/domain/disk.js';
import { DiskGuard } from '../../src/store/disk-guard.js';
import { allInService } from '../helpers/fake-node.js';
import { isProblem } from '../helpers/assert.js';
import { waitForEvents } from '../helpers/events.js';
import { follow } from '../helpers/follow.js';
import { staticGroup, startTestService } from '../helpers/service.js';
import { tmpfs } from '../helpers/tmpfs.js';
import { ladder } from '../helpers/fixtures.js';

test('a full disk refuses writes with 503 STORE_UNAVAILABLE, reads go on, and writes come back by themselves', async (t) => {
  const mount = tmpfs(t, 'size=40m');
  const svc = await startTestService({
    dataDir: join(mount, 'data'),
    config: { minFreeBytes: MIN_FREE_FLOOR },
    groups: [
      staticGroup({
        nodes: [
          { id: 'o1', role: 'origin', region: 'r1' },
          { id: 'e1', role: 'edge', region: 'r1' },
        ],
        rules: [
          { region: 'r1', role: 'origin', min: 0, max: 4, limit: 1e6 },
          { region: 'r1', role: 'edge', min: 0, max: 4, limit: 1e6 },
        ],
      }),
    ],
  });
  t.teardown(() => svc.close());
  await allInService(svc, 'g', ['o1', 'e1']);
  // Followed from before the disk fills: an event the log cannot take is sent live, not replayed.
  const events = follow(svc.url, svc.adminToken);
  t.teardown(() => events.close());
  t.is((await svc.get('/as/v1/streams/live/before/publish')).status, 200);
  t.is((await svc.send('POST', '/as/v1/provision/g', ladder('kept'))).status, 201);
  // The follower is on the stream (it has the last event) before the disk fills: what is sent live only must reach it.
  await events.until((f) => f.event.type === 'provision.changed' && (f.event as { stream?: string }).stream === 'kept');

  execFileSync('sh', ['-c', `dd if=/dev/zero of=${join(mount, 'junk')} bs=1M count=64 2>/dev/null || true`]);
  // Provisions are large enough that the next write needs new pages.
  const refused = await svc.send('POST', '/as/v1/provision/g', {
    ...ladder('refused'),
    streams: Array.from({ length: 16 }, (_, i) => ({ ...ladder('x').streams[0]!, name: `refused_${i}_${'n'.repeat(100)}`, level: i })),
  });
  const p = isProblem(t, refused, 503, 'STORE_UNAVAILABLE');
  t.regex(p.detail, /no space left/);
  t.truthy(refused.headers.get('retry-after'));
  isProblem(t, await svc.get('/as/v1/streams/live/new-while-full/publish'), 503, 'STORE_UNAVAILABLE');
  isProblem(t, await svc.send('POST', '/as/v1/auth/password', { currentPassword: 'correct-horse-battery', newPassword: 'a-new-password-here' }), 503, 'STORE_UNAVAILABLE');
  // Reads go on.
  t.is((await svc.get('/as/v1/streams/live/before/subscribe')).status, 200);
  t.is((await svc.get('/as/v1/streams/live/before/publish')).status, 200, 'a bound stream needs no write');
  t.is((await svc.get('/as/v1/provision/g/kept')).status, 200);
  t.is((await svc.get('/as/v1/streams')).status, 200);
  const unavailable = await events.until((f) => f.event.type === 'store.unavailable');
  t.regex((unavailable.event as { message: string }).message, /no space left/);
  t.is(unavailable.id, undefined, 'not in the log (it is full): sent without an id');

  rmSync(join(mount, 'junk'));
  t.is((await svc.send('POST', '/as/v1/provision/g', ladder('after'))).status, 201);
  t.is((await svc.get('/as/v1/streams/live/after-full/publish')).status, 200);
  const after = await waitForEvents(svc.url, svc.adminToken, (s) => s.some((e) => e.type === 'store.recovered') && s.some((e) => e.type === 'stream.bound' && e.stream === 'after-full'));
  t.is((await svc.get('/as/v1/provision/g/kept')).status, 200, 'nothing acknowledged was lost');
  // Events tell only what was committed: none for the binding the full disk refused.
  t.false(after.some((e) => e.type === 'stream.bound' && e.stream === 'new-while-full'));
});

test('on a read-only file system the guard refuses writes, naming the cause', (t) => {
  const mount = tmpfs(t, 'size=8m,ro', 'switchyard-rofs-');
  const guard = new DiskGuard(mount, 0);
  const err = t.throws(() => guard.check(), { name: 'StoreUnavailable' });
  t.regex(err!.message, /read-only/);
});
