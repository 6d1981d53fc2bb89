// `switchyard backup`: a consistent copy of the LMDB database. Of a running service, taken by the
// service itself under a stream of writes (GET /as/v1/admin/backup): the service writes on, and a
// service started on a directory holding only the copy has everything acknowledged before the copy
// was asked for. Of a stopped one, read from its data directory.
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { projectPath } from '../../src/paths.js';
import { staticGroup, startTestService, tempDir } from '../helpers/service.js';
import { ladder } from '../helpers/fixtures.js';

const CLI = projectPath('dist', 'src', 'cli', 'switchyard.js');

/** The CLI, without blocking this process's event loop (the service in it goes on answering). */
function cliAsync(args: string[], env: Record<string, string> = {}): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const proc = spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => proc.once('close', (status) => resolve({ status, stdout, stderr })));
}

test('a running service backs itself up under writes and writes on; a service started on the copy has all it acknowledged before; a stopped one is copied from its directory', async (t) => {
  // Its own data directory, which the test removes: the helper's would go with the close.
  const data = tempDir();
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  const svc = await startTestService({ dataDir: data, groups: [staticGroup()] });
  t.teardown(() => svc.close());
  const dir = tempDir('switchyard-backup-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  t.is((await svc.send('POST', '/as/v1/provision/g', ladder('kept'))).status, 201);
  t.is((await svc.send('POST', '/as/v1/nodegroups', staticGroup({ name: 'api-made' }))).status, 201);
  t.is((await svc.send('POST', '/as/v1/auth/password', { currentPassword: 'correct-horse-battery', newPassword: 'changed-before-the-backup' })).status, 204);
  const token = ((await svc.send('POST', '/as/v1/auth/login', { username: 'admin', password: 'changed-before-the-backup' }, null)).json as { accessToken: string }).accessToken;
  const env = { SWITCHYARD_TOKEN: token, SWITCHYARD_URL: svc.url, XDG_CONFIG_HOME: dir };

  // Writes, four at a time, each provision acknowledged (201: committed) in the order seen.
  const acked: string[] = [];
  const failed: string[] = [];
  let writing = true;
  t.teardown(() => {
    writing = false;
  });
  let n = 0;
  const writers = Array.from({ length: 4 }, async () => {
    while (writing) {
      const name = `w${n++}`;
      const r = await svc.send('POST', '/as/v1/provision/g', ladder(name), token).catch((err: Error) => ({ status: 0, text: err.message }));
      if (r.status !== 201) {
        failed.push(`${name}: ${r.status} ${r.text}`);
        return;
      }
      acked.push(name);
    }
  });
  const atLeast = async (count: number) => {
    while (acked.length < count && failed.length === 0) await new Promise((r) => setImmediate(r));
  };
  await atLeast(50);

  // Running: the service takes the copy; every write acknowledged before the CLI asked is in it.
  const file = join(dir, 'copy.mdb');
  const before = [...acked];
  const r = await cliAsync(['backup', file, '--data-dir', svc.dataDir, '--json'], env);
  t.is(r.status, 0, r.stderr);
  t.like(JSON.parse(r.stdout), { source: svc.url, destination: file });
  t.is(statSync(file).mode & 0o777, 0o600);
  t.false(existsSync(`${file}.partial`));
  // The service was not stopped by it: it writes on, while the copy was taken and after.
  const during = acked.length - before.length;
  await atLeast(acked.length + 50);
  writing = false;
  await Promise.all(writers);
  t.deepEqual(failed, [], 'every write acknowledged');
  t.log(`${before.length} provisions acknowledged before the backup, ${during} while it ran, ${acked.length} in all`);

  // Refused without a token (exit 4), never over an existing file (2), nothing left behind.
  const other = join(dir, 'other.mdb');
  t.is((await cliAsync(['backup', other, '--data-dir', svc.dataDir], { SWITCHYARD_URL: svc.url, XDG_CONFIG_HOME: dir })).status, 4);
  t.is((await cliAsync(['backup', file, '--data-dir', svc.dataDir], env)).status, 2, 'never over an existing file');
  t.false(existsSync(other));
  t.is((await svc.get('/as/v1/admin/backup', null)).status, 401);

  // Stopped: copied from the data directory.
  await svc.close();
  const stopped = join(dir, 'stopped.mdb');
  const s = await cliAsync(['backup', stopped, '--data-dir', svc.dataDir, '--json'], { XDG_CONFIG_HOME: dir });
  t.is(s.status, 0, s.stderr);
  t.like(JSON.parse(s.stdout), { source: join(svc.dataDir, 'switchyard.mdb'), destination: stopped });
  t.is((await cliAsync(['backup', join(dir, 'x.mdb'), '--data-dir', join(dir, 'nothing')], { XDG_CONFIG_HOME: dir })).status, 1);

  for (const [copy, wanted] of [
    [file, before],
    [stopped, acked],
  ] as const) {
    const restored = tempDir('switchyard-restored-');
    t.teardown(() => rmSync(restored, { recursive: true, force: true }));
    mkdirSync(restored, { recursive: true, mode: 0o700 });
    copyFileSync(copy, join(restored, 'switchyard.mdb'));
    const again = await startTestService({ dataDir: restored, groups: [staticGroup()], noLogin: true, env: { SWITCHYARD_ADMIN_PASSWORD: '' } });
    const login = await again.send('POST', '/as/v1/auth/login', { username: 'admin', password: 'changed-before-the-backup' }, null);
    t.is(login.status, 200, 'the changed password came with the copy');
    const restoredToken = (login.json as { accessToken: string }).accessToken;
    t.is((await again.get('/as/v1/nodegroups/api-made', restoredToken)).status, 200);
    const missing: string[] = [];
    for (const name of ['kept', ...wanted]) if ((await again.get(`/as/v1/provision/g/${name}`, restoredToken)).status !== 200) missing.push(name);
    t.deepEqual(missing, [], `acknowledged before the copy, missing from ${copy}`);
    await again.close();
  }
});
