// The CLI (docs/cli.md) as a program, against a real service started by the test: the session
// and its token file, tables and --json (the API's own JSON), exit codes, --help everywhere, and
// long operations that wait with their live events.
import { spawn } from 'node:child_process';
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { COMMANDS } from '../../src/cli/commands/all.js';
import { projectPath } from '../../src/paths.js';
import { allInService } from '../helpers/fake-node.js';

import { ADMIN_PASSWORD, staticGroup, startTestService, tempDir } from '../helpers/service.js';
import { CLI, cli, loggedIn } from '../helpers/cli.js';
import { until } from '../helpers/until.js';
import { freePort } from '../helpers/ports.js';
import { localGroup } from '../helpers/fixtures.js';

test('login keeps the token with its URL in a 0600 file in a 0700 directory; a wrong password is exit 4 and saves nothing', async (t) => {
  const svc = await startTestService();
  t.teardown(() => svc.close());
  const home = tempDir('switchyard-cli-');
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const wrong = await cli(home, ['login', '--url', svc.url, '--password-stdin'], { input: 'not-the-password\n' });
  t.is(wrong.code, 4, wrong.stderr);
  t.regex(wrong.stderr, /401 INVALID_CREDENTIALS/);
  t.throws(() => statSync(join(home, 'config', 'switchyard', 'token')));

  const ok = await cli(home, ['login', '--url', svc.url, '--password-stdin'], { input: `${ADMIN_PASSWORD}\n` });
  t.is(ok.code, 0, ok.stderr);
  const file = join(home, 'config', 'switchyard', 'token');
  t.is(statSync(file).mode & 0o777, 0o600);
  t.is(statSync(join(home, 'config', 'switchyard')).mode & 0o777, 0o700);
  const saved = JSON.parse(readFileSync(file, 'utf8')) as { url: string; user: string; token: string };
  t.like(saved, { url: svc.url, user: 'admin' });
  t.is((await svc.get('/as/v1/nodegroups', saved.token)).status, 200, 'the saved token works');

  // It is sent only to the URL it came from, and not once expired.
  const elsewhere = await cli(home, ['status', '--url', 'http://127.0.0.1:9999']);
  t.is(elsewhere.code, 4);
  t.regex(elsewhere.stderr, new RegExp(`logged in to ${svc.url}, not to http://127.0.0.1:9999`));
  writeFileSync(file, JSON.stringify({ ...saved, expiresAt: Date.now() - 1000 }), { mode: 0o600 });
  const expired = await cli(home, ['status']);
  t.is(expired.code, 4);
  t.regex(expired.stderr, /expired .*switchyard login/);
  t.is((await cli(home, ['logout'])).code, 0);
  const none = await cli(home, ['status', '--url', svc.url]);
  t.is(none.code, 4);
  t.regex(none.stderr, /not logged in: switchyard login/);
});

test('exit codes: 2 for usage, 3 for a service that cannot be reached; --help on every command answers 0', async (t) => {
  const home = tempDir('switchyard-cli-');
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const unknown = await cli(home, ['nodegroups', 'frobnicate']);
  t.is(unknown.code, 2);
  t.regex(unknown.stderr, /unknown command 'nodegroups frobnicate'/);
  const badOption = await cli(home, ['status', '--colour']);
  t.is(badOption.code, 2);
  t.regex(badOption.stderr, /Unknown option '--colour'/);
  const missing = await cli(home, ['lookup', 'publish']);
  t.is(missing.code, 2);
  t.regex(missing.stderr, /missing STREAM/);
  const noFile = await cli(home, ['nodegroups', 'create']);
  t.is(noFile.code, 2);
  t.regex(noFile.stderr, /--file is required/);
  const nothing = await cli(home, []);
  t.is(nothing.code, 2);
  t.regex(nothing.stderr, /usage: switchyard COMMAND/);
  // A port nothing listens on.
  const port = await freePort();
  const away = await cli(home, ['status', '--url', `http://127.0.0.1:${port}`], { env: { SWITCHYARD_TOKEN: 'x' } });
  t.is(away.code, 3);
  t.regex(away.stderr, new RegExp(`cannot reach http://127\\.0\\.0\\.1:${port}: connection refused`));
  const version = await cli(home, ['--version']);
  t.is(version.stdout, `${(JSON.parse(readFileSync(projectPath('package.json'), 'utf8')) as { version: string }).version}\n`);
  for (const c of COMMANDS) {
    const r = await cli(home, [...c.name.split(' '), '--help']);
    t.is(r.code, 0, c.name);
    t.true(r.stdout.startsWith(`usage: switchyard ${c.name}`), `${c.name}: ${r.stdout.slice(0, 80)}`);
    t.regex(r.stdout, /global options:\n.*--json/s);
  }
  const overview = await cli(home, ['--help']);
  t.is(overview.code, 0);
  for (const c of COMMANDS) t.true(overview.stdout.includes(`  ${c.name}`), c.name);
  t.regex(overview.stdout, /exit codes: 0 done, 1 .*2 usage error, 3 service not reachable,\s+4 not authorised/s);
});

test("status, lookups, node groups, nodes and provisions: tables for people, and --json is the API's own JSON", async (t) => {
  // Nodes that report once and stay in service for the whole test.
  const svc = await startTestService({ groups: [staticGroup({ timing: { nodeTimeout: '10m' } })] });
  t.teardown(() => svc.close());
  await allInService(svc, 'g', ['o1', 'o2', 'o3', 'e1', 'e2', 'e3', 't1']);
  const home = await loggedIn(t, svc);

  const status = await cli(home, ['status']);
  t.is(status.code, 0, status.stderr);
  t.regex(status.stdout, new RegExp(`^${svc.url}  ready  1 node group`));
  t.regex(status.stdout, /^g\s+static\s+r1,r2\s+7\s+0\s+0\s+0\s+active$/m);
  t.regex(status.stdout, /^g\s+origin\s+3\s+0\s+0\s+0\s+0\s+0\/9\s+0%$/m);
  const statusJson = JSON.parse((await cli(home, ['status', '--json'])).stdout) as { ready: unknown; nodegroups: unknown; streams: unknown };
  t.deepEqual(statusJson.nodegroups, (await svc.get('/as/v1/nodegroups?limit=1000')).json);
  t.deepEqual(statusJson.ready, (await svc.get('/as/v1/readyz', null)).json);

  const publish = await cli(home, ['lookup', 'publish', 'cam1', '--region', 'r2', '--json']);
  t.is(publish.code, 0, publish.stderr);
  const assignment = JSON.parse(publish.stdout) as { nodeId: string; serverAddress: string };
  t.like(assignment, { nodeId: 'o3', region: 'r2', role: 'origin', name: 'cam1', protocol: 'rtmp', port: 1935 });
  const again = await cli(home, ['lookup', 'publish', 'cam1']);
  t.regex(again.stdout, /^o3\s+origin\s+r2\s+10\.0\.0\.3\s+rtmp:\/\/10\.0\.0\.3:1935\/live\/cam1\?token=[A-Za-z0-9_-]+$/m, 'a reconnect lands where it was');
  const notThere = await cli(home, ['lookup', 'subscribe', 'nobody', '--json']);
  t.is(notThere.code, 1);
  t.like(JSON.parse(notThere.stdout), { status: 404, code: 'STREAM_NOT_FOUND' }, 'the problem itself, for scripts');
  t.regex(notThere.stderr, /404 STREAM_NOT_FOUND: stream 'nobody' is not published/);

  const show = await cli(home, ['nodegroups', 'show', 'g']);
  t.regex(show.stdout, /^r1\s+origin\s+0\s+4\s+2\s+0\s+0/m);
  t.regex(show.stdout, /^o3\s+origin\s+r2\s+INSERVICE\s+10\.0\.0\.3\s+-\s+1\s+3\s+0\s+\d+s ago/m);
  t.deepEqual(JSON.parse((await cli(home, ['nodegroups', 'show', 'g', '--json'])).stdout), (await svc.get('/as/v1/nodegroups/g?limit=1000')).json);
  const listed = JSON.parse((await cli(home, ['nodes', 'list', '--state', 'INSERVICE', '--role', 'edge', '--json'])).stdout) as Array<{ id: string }>;
  t.deepEqual(
    listed.map((n) => n.id),
    ['e1', 'e2', 'e3'],
    'the only group is the default one',
  );

  const token = await cli(home, ['nodes', 'token', 'e1']);
  t.is(token.code, 0, token.stderr);
  const beat = await svc.send('POST', '/as/v1/nodes/e1/events', { ready: true, metrics: {}, streams: [] }, token.stdout.trim());
  t.is(beat.status, 200, "the printed token is the node's");

  const dir = tempDir('switchyard-cli-files-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const ladder = { streamName: 'show', region: 'r1', streams: [{ name: 'show_360', level: 1, videoBR: 800000, videoWidth: 640, videoHeight: 360, videoFPS: 30, audioBR: 64000 }] };
  writeFileSync(join(dir, 'show.json'), JSON.stringify(ladder));
  const created = await cli(home, ['provisions', 'create', '-f', join(dir, 'show.json')]);
  t.is(created.code, 0, created.stderr);
  t.regex(created.stdout, /^show_360\s+1\s+640x360\s+30\s+800 kb\/s\s+64 kb\/s$/m);
  t.deepEqual(JSON.parse((await cli(home, ['provisions', 'show', 'show', '--json'])).stdout), (await svc.get('/as/v1/provision/g/show')).json);
  const twice = await cli(home, ['provisions', 'create', '-f', '-'], { input: JSON.stringify(ladder) });
  t.is(twice.code, 1);
  t.regex(twice.stderr, /409 PROVISION_EXISTS/);
  const bad = await cli(home, ['provisions', 'create', '-f', '-'], { input: JSON.stringify({ ...ladder, streamName: 'x', region: 'mars' }) });
  t.is(bad.code, 1);
  t.regex(bad.stderr, /400 VALIDATION_FAILED.*\n {2}body\.region: /);
  const transcode = await cli(home, ['lookup', 'transcode', 'show', '--json']);
  t.like(JSON.parse(transcode.stdout), { nodeId: 't1', role: 'transcoder' });
  t.is((await cli(home, ['provisions', 'delete', 'show'])).code, 0);
  t.is((await svc.get('/as/v1/provision/g/show')).status, 404);
});

test('nodegroups create waits for its nodes INSERVICE with their events; nodes drain waits for the node to go; delete waits for the group to go', async (t) => {
  const svc = await startTestService({ groups: [staticGroup()] });
  t.teardown(() => svc.close());
  const home = await loggedIn(t, svc);
  const dir = tempDir('switchyard-cli-files-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const group = localGroup({ name: 'live', firstAddress: '127.0.50.2', edges: { min: 2, max: 3 } });
  writeFileSync(join(dir, 'live.json'), JSON.stringify(group));
  const created = await cli(home, ['nodegroups', 'create', '-f', join(dir, 'live.json')]);
  t.is(created.code, 0, created.stderr);
  t.regex(created.stdout, /^node group live created; its nodes are in service$/m);
  t.is((created.stderr.match(/node\.state\s+live {2}\S+ STARTED → INSERVICE/g) ?? []).length, 3, created.stderr);
  const detail = (await svc.get('/as/v1/nodegroups/live')).json as { nodeList: Array<{ id: string; role: string; state: string }> };
  t.is(detail.nodeList.filter((n) => n.state === 'INSERVICE').length, 3, 'in service when the command returned');

  const edge = detail.nodeList.find((n) => n.role === 'edge')!;
  const drained = await cli(home, ['nodes', 'drain', edge.id, '--group', 'live']);
  t.is(drained.code, 0, drained.stderr);
  t.regex(drained.stderr, new RegExp(`${edge.id} INSERVICE → SOFT_SUNSET`));
  t.regex(drained.stderr, new RegExp(`${edge.id} \\S+ → removed`));
  t.false(((await svc.get('/as/v1/nodegroups/live')).json as { nodeList: Array<{ id: string }> }).nodeList.some((n) => n.id === edge.id));

  const refused = await cli(home, ['nodegroups', 'delete', 'live']);
  t.is(refused.code, 2, 'no --yes without a terminal');
  const deleted = await cli(home, ['nodegroups', 'delete', 'live', '--yes']);
  t.is(deleted.code, 0, deleted.stderr);
  t.regex(deleted.stderr, /nodegroup\.changed\s+live {2}deleting/);
  t.is((await svc.get('/as/v1/nodegroups/live')).status, 404, 'gone when the command returned');

  // A group whose nodes never report: the wait gives up with exit 5, and says the operation goes on.
  const silent = { ...staticGroup({ name: 'silent', nodes: [{ id: 's1', role: 'origin', region: 'r1' }] }), rules: [{ region: 'r1', role: 'origin', min: 1, max: 1 }] };
  const gaveUp = await cli(home, ['nodegroups', 'create', '-f', '-', '--timeout', '1s'], { input: JSON.stringify(silent) });
  t.is(gaveUp.code, 5, gaveUp.stderr);
  t.regex(gaveUp.stderr, /gave up waiting for the nodes of silent to come INSERVICE after 1 s; it goes on in the service/);
  const full = await cli(home, ['lookup', 'publish', 'cam', '--group', 'silent']);
  t.is(full.code, 1);
  t.regex(full.stderr, /503 NO_CAPACITY: .*\n {2}retry in \d+ s/);
  const invalid = await cli(home, ['nodegroups', 'create', '-f', '-', '--json'], {
    input: JSON.stringify({ ...silent, name: 'bad', rules: [{ region: 'r1', role: 'origin', limit: 'avg(memory.total)' }] }),
  });
  t.is(invalid.code, 1);
  t.like(JSON.parse(invalid.stdout), { status: 400, code: 'VALIDATION_FAILED' });
  t.regex(invalid.stderr, /body\.rules\[0\]\.limit: unknown metric 'memory\.total'/);
});

test('events tail: --since N --no-follow replays the log as the API sends it; without, it follows live events until stopped', async (t) => {
  const svc = await startTestService({ groups: [staticGroup({ timing: { nodeTimeout: '10m' } })] });
  t.teardown(() => svc.close());
  const nodes = await allInService(svc, 'g', ['o1', 'e1']);
  const home = await loggedIn(t, svc);
  const replay = await cli(home, ['events', 'tail', '--since', '0', '--no-follow', '--json']);
  t.is(replay.code, 0, replay.stderr);
  const events = replay.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { seq: number; type: string; nodeId?: string; to?: string });
  t.deepEqual(
    events.map((e) => e.seq),
    events.map((_, i) => events[0]!.seq + i),
    'every event, in order',
  );
  t.true(events.some((e) => e.type === 'node.state' && e.nodeId === 'e1' && e.to === 'INSERVICE'));
  const human = await cli(home, ['events', 'tail', '--since', '0', '--no-follow', '--type', 'node.state']);
  t.regex(human.stdout, /^\S+Z {2}#\d+ {2}node\.state {8}g {2}e1 STARTED → INSERVICE \(ready\)$/m);

  const proc = spawn(process.execPath, [CLI, 'events', 'tail', '--type', 'node.'], {
    env: { PATH: process.env.PATH ?? '', HOME: home, XDG_CONFIG_HOME: join(home, 'config') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const closed = new Promise<number | null>((r) => proc.once('close', (code) => r(code)));
  t.teardown(() => proc.kill('SIGKILL'));
  // Live: o1 says it is not ready, then ready again, until the running tail shows it (it may not
  // have connected for the first ones).
  const o1 = nodes.get('o1')!;
  await until(
    async () => {
      await o1.beat({ ready: false });
      await o1.beat({ ready: true });
      return /o1 INSERVICE → STARTED/.test(out);
    },
    15_000,
    'o1 leaving service in the tail',
  );
  t.false(/e1 STARTED → INSERVICE/.test(out), 'without --since, only what happens from now on');
  proc.kill('SIGINT');
  t.is(await closed, 0);
});

test('login on a terminal asks for the password without echoing it', async (t) => {
  const svc = await startTestService();
  t.teardown(() => svc.close());
  const home = tempDir('switchyard-cli-');
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  // util-linux's script gives the CLI a terminal; what it echoes comes back on its stdout.
  const command = [process.execPath, CLI, 'login', '--url', svc.url].map((a) => `'${a}'`).join(' ');
  const proc = spawn('script', ['-qfec', command, '/dev/null'], {
    env: { PATH: process.env.PATH ?? '', HOME: home, XDG_CONFIG_HOME: join(home, 'config'), TERM: 'dumb' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let screen = '';
  const closed = new Promise<number | null>((r) => proc.once('close', (code) => r(code)));
  await new Promise<void>((resolve, reject) => {
    proc.stdout.on('data', (c: Buffer) => {
      screen += c.toString();
      if (screen.includes(`password for admin at ${svc.url}: `)) resolve();
    });
    void closed.then((code) => reject(new Error(`exited (${code}) before asking: ${screen}`)));
  });
  proc.stdin.write(`${ADMIN_PASSWORD}\r`);
  t.is(await closed, 0, screen);
  t.false(screen.includes(ADMIN_PASSWORD), 'not echoed');
  t.regex(screen, /logged in to .* as admin/);
  t.is(statSync(join(home, 'config', 'switchyard', 'token')).mode & 0o777, 0o600);
});

test('password changes the password from standard input, retires the saved token, and the new one logs in', async (t) => {
  const svc = await startTestService();
  t.teardown(() => svc.close());
  const home = await loggedIn(t, svc);
  const changed = await cli(home, ['password'], { input: `${ADMIN_PASSWORD}\nan-entirely-new-password\n` });
  t.is(changed.code, 0, changed.stderr);
  t.throws(() => statSync(join(home, 'config', 'switchyard', 'token')));
  t.is((await cli(home, ['login', '--url', svc.url, '--password-stdin'], { input: 'an-entirely-new-password\n' })).code, 0);
  t.is((await cli(home, ['status'])).code, 0);
});
