// Graceful shutdown (issue 6.5): on SIGTERM the service stops accepting, finishes the request in
// flight, stops its local nodes, flushes LMDB and exits 0; what it acknowledged is there after.
import { writeFileSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import test from 'ava';
import { eventually, inService, waitForEvents } from '../helpers/events.js';
import { body, request } from '../helpers/http.js';
import { spawnService, type ServiceProcess } from '../helpers/process.js';
import { killAgentsOf, tempDir } from '../helpers/service.js';

const PASSWORD = 'e2e-admin-password';

function config(dir: string): string {
  const file = join(dir, 'config.json');
  writeFileSync(
    file,
    JSON.stringify({
      server: { host: '127.0.0.1', port: 0, shutdownTimeout: '10s' },
      supervisorTick: '100ms',
      nodeGroups: [
        {
          name: 'default',
          platform: { type: 'local', local: { firstAddress: '127.0.30.2', port: 0 } },
          regions: [{ name: 'here', lat: 50, lon: 8 }],
          roles: { origin: {}, edge: { parentRole: 'origin' } },
          rules: [
            { region: 'here', role: 'origin', min: 1, max: 2, limit: 10 },
            { region: 'here', role: 'edge', min: 1, max: 2, limit: 10 },
          ],
          timing: { heartbeatMs: 100, nodeTimeout: '3s' },
        },
      ],
    }),
  );
  return file;
}

/** A connection that can be refused: resolves true once the port accepts nothing. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', () => resolve(true));
  });
}

test('SIGTERM: no new connections, the request in flight completes, local nodes stop, exit 0, nothing acknowledged lost', async (t) => {
  const dir = tempDir('switchyard-e2e-');
  const env = { SWITCHYARD_CONFIG: config(dir), SWITCHYARD_DATA_DIR: join(dir, 'data'), SWITCHYARD_ADMIN_PASSWORD: PASSWORD };
  let svc: ServiceProcess | null = null;
  t.teardown(() => {
    if (svc && svc.proc.exitCode === null) svc.proc.kill('SIGKILL');
    killAgentsOf(env.SWITCHYARD_DATA_DIR);
    rmSync(dir, { recursive: true, force: true });
  });
  svc = await spawnService(env);
  const login = async (url: string) => body<{ accessToken: string }>(await request(url, 'POST', '/as/v1/auth/login', { username: 'admin', password: PASSWORD })).accessToken;
  let token = await login(svc.url);
  await waitForEvents(svc.url, token, (seen) => inService(seen).size >= 2);
  t.is((await request(svc.url, 'POST', '/as/v1/provision/default', { streamName: 'before', region: 'here', streams: [{ name: 'before_1', level: 1, videoBR: 1_000_000, videoWidth: 640, videoHeight: 360, videoFPS: 30, audioBR: 64_000 }] }, { authorization: `Bearer ${token}` })).status, 201);

  // A request in flight: its headers are sent before the SIGTERM, its body after. `Expect:
  // 100-continue` makes the server say when it has the headers, so the request is surely in flight.
  const port = Number(new URL(svc.url).port);
  const payload = JSON.stringify({ streamName: 'inflight', region: 'here', streams: [{ name: 'inflight_1', level: 1, videoBR: 1_000_000, videoWidth: 640, videoHeight: 360, videoFPS: 30, audioBR: 64_000 }] });
  const socket: Socket = connect(port, '127.0.0.1');
  await new Promise((r) => socket.once('connect', r));
  let answer = '';
  let onData = () => {};
  socket.on('data', (d) => {
    answer += d.toString();
    onData();
  });
  // The server may reset the connection once it has answered: what counts is the answer.
  socket.on('error', () => {});
  const closed = new Promise((r) => socket.once('close', r));
  const continued = new Promise<void>((r) => (onData = () => answer.includes('100 Continue') && r()));
  socket.write(`POST /as/v1/provision/default HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${payload.length}\r\nExpect: 100-continue\r\n\r\n`);
  await continued;
  answer = '';

  const stoppedAt = Date.now();
  svc.proc.kill('SIGTERM');
  await eventually(() => refused(port), 10_000, 'the port to refuse new connections');
  socket.write(payload);
  await closed;
  t.regex(answer, /^HTTP\/1\.1 201 /, 'the request in flight was answered');
  const exit = await Promise.race([svc.exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 20_000))]);
  t.is(exit, 0, `exit code (output: ${svc.output.slice(-5).join(' | ')})`);
  t.log(`stopped ${Date.now() - stoppedAt} ms after SIGTERM`);
  t.is(killAgentsOf(env.SWITCHYARD_DATA_DIR), 0, 'no local node outlives the service');
  t.true(svc.output.some((l) => l.includes('"msg":"stopped"')));
  t.false(svc.output.some((l) => l.includes('at the shutdown timeout')), 'the drain finished by itself, not by the shutdown timeout');

  svc = await spawnService(env);
  token = await login(svc.url);
  for (const name of ['before', 'inflight']) t.is((await request(svc.url, 'GET', `/as/v1/provision/default/${name}`, undefined, { authorization: `Bearer ${token}` })).status, 200, name);
});
