// Secrets stay private (security audit of 2026-11): the data directory is 0700 and nothing in it
// is open to group or others whatever the umask; a looser directory is tightened at start, and the
// start says so; the generated password is a plain line on stderr, never in the JSON log; a failed
// login does not log an unknown user name verbatim (a password typed there would land in the log).
import { chmodSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { captureLog } from '../helpers/log-capture.js';
import { request } from '../helpers/http.js';
import { startTestService, tempDir } from '../helpers/service.js';

// Files made from here on would be world-readable if the service relied on the umask.
process.umask(0);

/** Every entry under `dir` whose mode lets group or others in, with its mode. */
function shared(dir: string): string[] {
  const out: string[] = [];
  const visit = (path: string) => {
    let st: ReturnType<typeof statSync>;
    try {
      st = statSync(path);
    } catch {
      return; // a file the service removed meanwhile (its disk guard's write probe, say)
    }
    if ((st.mode & 0o077) !== 0) out.push(`${path} ${(st.mode & 0o777).toString(8)}`);
    if (st.isDirectory()) for (const name of readdirSync(path)) visit(join(path, name));
  };
  visit(dir);
  return out;
}

test('under umask 0 the data directory is 0700 and its files 0600; a loosened one is tightened at the next start, which says so', async (t) => {
  const dataDir = join(tempDir(), 'data');
  const first = await startTestService({ dataDir, env: { SWITCHYARD_ADMIN_PASSWORD: '' }, noLogin: true, announce: () => {} });
  t.is(statSync(dataDir).mode & 0o777, 0o700);
  for (const name of ['switchyard.mdb', 'switchyard.mdb-lock', 'switchyard.pid', 'initial-admin-password']) {
    t.is(statSync(join(dataDir, name)).mode & 0o777, 0o600, name);
  }
  t.deepEqual(shared(dataDir), []);
  await first.close();

  // An older version, a restore or an operator's chmod left it open.
  chmodSync(dataDir, 0o755);
  chmodSync(join(dataDir, 'switchyard.mdb'), 0o644);
  writeFileSync(join(dataDir, 'notes.txt'), 'x', { mode: 0o666 });
  const { lines, log } = captureLog();
  const second = await startTestService({ dataDir, env: { SWITCHYARD_ADMIN_PASSWORD: '' }, noLogin: true, log, announce: () => {} });
  t.teardown(() => second.close());
  t.deepEqual(shared(dataDir), []);
  t.is(statSync(join(dataDir, 'notes.txt')).mode & 0o777, 0o600);
  const warned = lines.map((l) => JSON.parse(l) as { msg: string; entries?: number; first?: string[] }).find((l) => /took group and other permissions off/.test(l.msg));
  t.truthy(warned, lines.join('\n'));
  t.is(warned!.entries, 3);
  t.deepEqual([...warned!.first!].sort(), ['.', 'notes.txt', 'switchyard.mdb']);
});

test('the generated password is announced once as a plain line, and no log line holds it', async (t) => {
  const { lines, log } = captureLog();
  const announced: string[] = [];
  const svc = await startTestService({ env: { SWITCHYARD_ADMIN_PASSWORD: '' }, noLogin: true, log, announce: (line) => announced.push(line) });
  t.teardown(() => svc.close());
  t.is(announced.length, 1);
  const password = /is (\S+) \(also in /.exec(announced[0]!)?.[1];
  t.truthy(password, announced[0]);
  t.is((await request(svc.url, 'POST', '/as/v1/auth/login', { username: 'admin', password })).status, 200);
  t.false(
    lines.some((l) => l.includes(password!)),
    'the JSON log never carries the password',
  );
  t.true(
    lines.some((l) => /generated the initial admin password/.test(l)),
    'the log says a password was generated, and where it is',
  );
});

test('a failed login logs a known user by name and an unknown one only by a tag', async (t) => {
  const { lines, log } = captureLog();
  const svc = await startTestService({ log });
  t.teardown(() => svc.close());
  const typo = 'my-Secret-passw0rd';
  t.is((await request(svc.url, 'POST', '/as/v1/auth/login', { username: typo, password: 'x' })).status, 401);
  t.is((await request(svc.url, 'POST', '/as/v1/auth/login', { username: 'admin', password: typo })).status, 401);
  const failures = lines.map((l) => JSON.parse(l) as { msg: string; user?: string; unknownUser?: string }).filter((l) => l.msg === 'login failed');
  t.is(failures.length, 2);
  t.false(
    lines.some((l) => l.includes(typo)),
    'neither the mistyped name nor the password is in the log',
  );
  t.regex(failures[0]!.unknownUser ?? '', /^[A-Za-z0-9_-]{12}$/);
  t.is(failures[1]!.user, 'admin');
});

test('/metrics is open on loopback and needs an admin token on other binds, unless the operator opens it', async (t) => {
  const loopback = await startTestService();
  t.teardown(() => loopback.close());
  t.is((await request(loopback.url, 'GET', '/as/v1/metrics')).status, 200);

  // 0.0.0.0 is reached here through 127.0.0.1; the bind is what decides.
  const open = await startTestService({ config: { server: { host: '0.0.0.0', port: 0 } } });
  t.teardown(() => open.close());
  t.is((await request(open.url, 'GET', '/as/v1/metrics')).status, 401);
  t.is((await open.get('/as/v1/metrics')).status, 200);

  const opened = await startTestService({ config: { server: { host: '0.0.0.0', port: 0, metricsAuth: 'none' } } });
  t.teardown(() => opened.close());
  t.is((await request(opened.url, 'GET', '/as/v1/metrics')).status, 200);
});
