// `switchyard backup`: a consistent copy of the LMDB file of a stopped service (refused while one
// runs there); a service started on a directory holding only the copy has everything it had.
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { projectPath } from '../../src/paths.js';
import { staticGroup, startTestService, tempDir } from '../helpers/service.js';
import { ladder } from '../helpers/fixtures.js';

const CLI = projectPath('dist', 'src', 'cli', 'switchyard.js');
const cli = (args: string[]) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });

/** The same, without blocking this process's event loop (the service in it goes on answering). */
function cliAsync(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const proc = spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => proc.once('close', (status) => resolve({ status, stdout, stderr })));
}

test('backup refuses while the service runs on the data directory; of a stopped one, a service started on the copy has its groups, provisions and users', async (t) => {
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

  // Running: refused, and nothing written. Opening the environment beside a service that commits
  // can leave lmdb-js's writer spinning for ever (it wedged this test's service once, with the copy
  // taken under a stream of writes).
  const file = join(dir, 'copy.mdb');
  const refused = await cliAsync(['backup', file, '--data-dir', svc.dataDir]);
  t.is(refused.status, 1);
  t.regex(refused.stderr, /is running on .*: stop it first/);
  t.false(existsSync(file));
  const token = ((await svc.send('POST', '/as/v1/auth/login', { username: 'admin', password: 'changed-before-the-backup' }, null)).json as { accessToken: string }).accessToken;
  t.is((await svc.send('POST', '/as/v1/provision/g', ladder('after-the-refusal'), token)).status, 201, 'the service writes on');

  await svc.close();
  const r = await cliAsync(['backup', file, '--data-dir', svc.dataDir, '--json']);
  t.is(r.status, 0, r.stderr);
  t.like(JSON.parse(r.stdout), { source: join(svc.dataDir, 'switchyard.mdb'), destination: file });
  t.is(statSync(file).mode & 0o777, 0o600);
  t.is(cli(['backup', file, '--data-dir', svc.dataDir]).status, 2, 'never over an existing file');
  t.is(cli(['backup', join(dir, 'x.mdb'), '--data-dir', join(dir, 'nothing')]).status, 1);

  const restored = join(dir, 'restored');
  mkdirSync(restored, { mode: 0o700 });
  copyFileSync(file, join(restored, 'switchyard.mdb'));
  const again = await startTestService({ dataDir: restored, groups: [staticGroup()], noLogin: true, env: { SWITCHYARD_ADMIN_PASSWORD: '' } });
  t.teardown(() => again.close());
  const login = await again.send('POST', '/as/v1/auth/login', { username: 'admin', password: 'changed-before-the-backup' }, null);
  t.is(login.status, 200, 'the changed password came with the copy');
  const restoredToken = (login.json as { accessToken: string }).accessToken;
  for (const name of ['kept', 'after-the-refusal']) t.is((await again.get(`/as/v1/provision/g/${name}`, restoredToken)).status, 200, name);
  t.is((await again.get('/as/v1/nodegroups/api-made', restoredToken)).status, 200);
});
