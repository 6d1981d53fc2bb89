// `npm run demo` after the admin password was changed (as the start-up log asks): the generated
// password's file is gone, and the demo logs in with the CLI's saved session instead of failing;
// with no credentials at all it says how to log in.
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { projectPath } from '../../src/paths.js';
import { ADMIN_PASSWORD, staticGroup, startTestService, tempDir } from '../helpers/service.js';

function run(file: string, args: string[], env: Record<string, string>, input = '') {
  const proc = spawn(process.execPath, [projectPath('dist', 'src', 'cli', file), ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  proc.stdin.on('error', () => {});
  proc.stdin.end(input);
  const closed = new Promise<number | null>((r) => proc.once('close', (code) => r(code)));
  return { proc, closed, out: () => stdout, err: () => stderr };
}

test("the demo logs in with `switchyard login`'s session once the generated password is gone, and says how when it has none", async (t) => {
  // Its node on a loopback address: whatever the demo does before it is stopped stays on this machine.
  const group = {
    ...staticGroup({ nodes: [], regions: ['r1'], rules: [{ region: 'r1', role: 'origin', min: 0, max: 1, limit: 10 }] }),
    platform: { type: 'static', static: { nodes: [{ id: 'o1', role: 'origin', region: 'r1', address: '127.0.71.2' }] } },
  };
  const svc = await startTestService({ groups: [group] });
  t.teardown(() => svc.close());
  const home = tempDir('switchyard-demo-');
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const newPassword = 'the-operators-own-password';
  t.is((await svc.send('POST', '/as/v1/auth/password', { currentPassword: ADMIN_PASSWORD, newPassword })).status, 204);
  const env = { HOME: home, XDG_CONFIG_HOME: join(home, 'config'), SWITCHYARD_URL: svc.url, SWITCHYARD_DATA_DIR: svc.dataDir, DEMO_GROUP: 'g' };

  const without = run('demo-load.js', [], env);
  t.is(await without.closed, 1);
  t.regex(without.out(), /no admin credentials: log in first with `npx switchyard login --url http:\/\/127\.0\.0\.1:\d+`/);

  const login = run('switchyard.js', ['login', '--password-stdin'], env, `${newPassword}\n`);
  t.is(await login.closed, 0, login.err());
  const demo = run('demo-load.js', [], env);
  t.teardown(() => demo.proc.kill('SIGKILL'));
  // Past its login: it shows the group, then starts its load (its first phase is this test's end).
  await new Promise<void>((resolve, reject) => {
    demo.proc.stdout.on('data', () => /phase 1:/.test(demo.out()) && resolve());
    void demo.closed.then((code) => reject(new Error(`the demo exited (${code}): ${demo.out()}`)));
  });
  t.regex(demo.out(), /the node group 'g' now:\n/);
});
