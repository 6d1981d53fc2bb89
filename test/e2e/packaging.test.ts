// Packaging (docs/operations.md): `npm pack` yields a tarball that installs into an empty prefix
// (dependencies from the npm cache that `npm ci` filled) with working `switchyard` and
// `switchyard-agent` programs, whose `switchyard serve` starts a service whose local nodes (the
// installed agent) come INSERVICE; the service's --help and --version answer instead of starting;
// and `npm start` does not rebuild a current build.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { projectPath } from '../../src/paths.js';

import { tempDir } from '../helpers/service.js';
import { until } from '../helpers/until.js';
import { localGroup } from '../helpers/fixtures.js';

const npm = (args: string[], cwd: string) => spawnSync('npm', args, { cwd, encoding: 'utf8', env: { ...process.env, npm_config_update_notifier: 'false' }, timeout: 180_000 });

/** A config of one local group whose nodes use loopback addresses no other test uses. */
const config = (dataDir: string) => ({
  server: { host: '127.0.0.1', port: 0 },
  dataDir,
  supervisorTick: '100ms',
  geoip: { enabled: false },
  nodeGroups: [localGroup({ firstAddress: '127.0.40.2', origins: { min: 1, max: 1 }, edges: { min: 1, max: 1 } })],
});

/** Runs a program until its JSON log says it listens; gives its URL and a way to stop it. */
function run(program: string, args: string[], env: Record<string, string>) {
  const proc = spawn(program, args, { env: { ...process.env, SWITCHYARD_LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const output: string[] = [];
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const url = new Promise<string>((resolve, reject) => {
    proc.stdout.on('data', (c: Buffer) => {
      for (const line of c.toString().split('\n')) {
        output.push(line);
        const m = /"msg":"listening"/.test(line) ? /"url":"([^"]+)"/.exec(line) : null;
        if (m) resolve(m[1]!);
      }
    });
    proc.stderr.on('data', (c: Buffer) => output.push(c.toString()));
    void exited.then((code) => reject(new Error(`exited (${code}) before listening:\n${output.slice(-20).join('\n')}`)));
  });
  url.catch(() => {});
  // The whole process group: npm's shell and the service under it.
  const stop = async () => {
    if (proc.exitCode === null) process.kill(-proc.pid!, 'SIGTERM');
    return exited;
  };
  return { url, stop, output };
}

test('npm pack → npm install into an empty prefix: switchyard --version, switchyard-agent --help, and switchyard serve with its nodes INSERVICE', async (t) => {
  const dir = tempDir('switchyard-pack-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const pack = npm(['pack', '--pack-destination', dir, '--silent'], projectPath());
  t.is(pack.status, 0, pack.stderr);
  const tarball = join(dir, pack.stdout.trim().split('\n').at(-1)!);
  const list = spawnSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).stdout.split('\n');
  t.true(list.includes('package/dist/src/main.js') && list.includes('package/dist/actors/host.js') && list.includes('package/config/default.json'));
  t.true(list.includes('package/config/systemd/switchyard.service') && list.includes('package/config/grafana/switchyard.json'));
  t.true(list.includes('package/npm-shrinkwrap.json'), 'the versions tested are the versions installed');
  t.false(
    list.some((f) => f.startsWith('package/dist/test/') || f.startsWith('package/src/') || f.startsWith('package/test/')),
    'no tests, no sources',
  );

  const prefix = join(dir, 'prefix');
  // The tarball carries the lock as npm-shrinkwrap.json; the project's overrides (a root's alone
  // apply) keep every version the one npm ci put in the cache, so the install needs no network.
  mkdirSync(prefix);
  const overrides = (JSON.parse(readFileSync(projectPath('package.json'), 'utf8')) as { overrides?: object }).overrides ?? {};
  writeFileSync(join(prefix, 'package.json'), JSON.stringify({ name: 'switchyard-install-test', private: true, overrides }));
  const install = npm(['install', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', '--omit=dev', tarball], dir);
  t.is(install.status, 0, install.stderr);
  const bin = join(prefix, 'node_modules', '.bin');
  const version = spawnSync(join(bin, 'switchyard'), ['--version'], { encoding: 'utf8' });
  t.is(version.status, 0, version.stderr);
  t.is(version.stdout.trim(), '0.1.0');
  const agentHelp = spawnSync(join(bin, 'switchyard-agent'), ['--help'], { encoding: 'utf8' });
  t.is(agentHelp.status, 0, agentHelp.stderr);
  t.regex(agentHelp.stdout, /^usage: switchyard-agent/);
  t.regex(agentHelp.stdout, /SWITCHYARD_NODE_TOKEN/);

  // The systemd units, pointed at this prefix's programs, pass systemd's own check without a warning.
  for (const unit of ['switchyard.service', 'switchyard-agent.service']) {
    const text = readFileSync(join(prefix, 'node_modules', 'switchyard', 'config', 'systemd', unit), 'utf8');
    t.regex(text, /^ExecStart=\/usr\/local\/bin\/switchyard/m);
    writeFileSync(join(dir, unit), text.replaceAll('/usr/local/bin/', `${bin}/`));
    const verify = spawnSync('systemd-analyze', ['verify', '--man=no', join(dir, unit)], { encoding: 'utf8' });
    t.is(verify.status, 0, verify.stderr);
    t.is(verify.stderr, '', `${unit}: ${verify.stderr}`);
  }

  const dataDir = join(dir, 'data');
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config(dataDir)));
  const service = run(join(bin, 'switchyard'), ['serve', '--config', join(dir, 'config.json')], { SWITCHYARD_ADMIN_PASSWORD: 'packaged-admin-password' });
  t.teardown(() => service.stop());
  const url = await service.url;
  const ready = await fetch(`${url}/as/v1/readyz`);
  t.is(ready.status, 200);
  const login = (await (
    await fetch(`${url}/as/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: 'packaged-admin-password' }) })
  ).json()) as { accessToken: string };
  // The installed agent runs the nodes: both come INSERVICE.
  await until(
    async () => {
      const g = (await (await fetch(`${url}/as/v1/nodegroups/default`, { headers: { authorization: `Bearer ${login.accessToken}` } })).json()) as { nodeList: Array<{ state: string }> };
      return g.nodeList.filter((n) => n.state === 'INSERVICE').length === 2;
    },
    30_000,
    'the installed agents to come INSERVICE',
  );
  t.is(await service.stop(), 0, 'stops cleanly on SIGTERM');
});

test('the service answers --help and --version instead of starting, and refuses other arguments', (t) => {
  const main = projectPath('dist', 'src', 'main.js');
  const dataDir = tempDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  // Were it to start, it would listen on a port of its default config and create the directory's files.
  const env = { ...process.env, SWITCHYARD_DATA_DIR: dataDir };
  const help = spawnSync(process.execPath, [main, '--help'], { encoding: 'utf8', env, timeout: 20_000 });
  t.is(help.status, 0, help.stderr);
  t.regex(help.stdout, /^usage: switchyard serve/);
  t.regex(help.stdout, /SWITCHYARD_DATA_DIR/);
  const version = spawnSync(process.execPath, [main, '--version'], { encoding: 'utf8', env, timeout: 20_000 });
  t.is(version.status, 0);
  t.is(version.stdout, '0.1.0\n');
  const bad = spawnSync(process.execPath, [main, '--port', '80'], { encoding: 'utf8', env, timeout: 20_000 });
  t.is(bad.status, 2);
  t.is(bad.stderr, "switchyard: unexpected argument '--port': settings come from the environment and the config file (switchyard --help)\n");
  t.deepEqual(readdirSync(dataDir), [], 'nothing started');
});

test('npm start does not rebuild a current build: no output file is written again', async (t) => {
  const root = projectPath();
  const build = npm(['run', 'build', '--silent'], root);
  t.is(build.status, 0, build.stdout + build.stderr);
  const outputs = ['src', 'actors'].flatMap((d) => readdirSync(projectPath('dist', d), { recursive: true, encoding: 'utf8' }).map((f) => projectPath('dist', d, f))).filter((f) => f.endsWith('.js'));
  const before = new Map(outputs.map((f) => [f, statSync(f).mtimeMs]));
  const dir = tempDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config(join(dir, 'data')), nodeGroups: [] }));
  const started = run('npm', ['start', '--silent'], { SWITCHYARD_CONFIG: join(dir, 'config.json'), SWITCHYARD_ADMIN_PASSWORD: 'npm-start-admin-password' });
  t.teardown(() => started.stop());
  t.is((await fetch(`${await started.url}/as/v1/healthz`)).status, 200);
  await started.stop();
  const rewritten = outputs.filter((f) => statSync(f).mtimeMs !== before.get(f));
  t.deepEqual(rewritten, []);
});
