// Graceful shutdown (issue 6.5): on SIGTERM the service stops accepting, finishes the request in
// flight, stops its local nodes, flushes LMDB and exits 0; what it acknowledged is there after.
import { connect, type Socket } from 'node:net';
import test from 'ava';
import { inService, waitForEvents } from '../helpers/events.js';
import { request } from '../helpers/http.js';
import { OwnService } from '../helpers/process.js';
import { killAgentsOf } from '../helpers/service.js';
import { until } from '../helpers/until.js';
import { localGroup } from '../helpers/fixtures.js';

const CONFIG = {
  server: { host: '127.0.0.1', port: 0, shutdownTimeout: '10s' },
  supervisorTick: '100ms',
  nodeGroups: [localGroup({ firstAddress: '127.0.30.2', timing: { heartbeatMs: 100, nodeTimeout: '3s' } })],
};

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
  const own = await OwnService.start(t, CONFIG);
  let svc = own.process;
  let token = await own.login();
  await waitForEvents(svc.url, token, (seen) => inService(seen).size >= 2);
  t.is(
    (
      await request(
        svc.url,
        'POST',
        '/as/v1/provision/default',
        { streamName: 'before', region: 'here', streams: [{ name: 'before_1', level: 1, videoBR: 1_000_000, videoWidth: 640, videoHeight: 360, videoFPS: 30, audioBR: 64_000 }] },
        { authorization: `Bearer ${token}` },
      )
    ).status,
    201,
  );

  // A request in flight: its headers are sent before the SIGTERM, its body after. `Expect:
  // 100-continue` makes the server say when it has the headers, so the request is surely in flight.
  const port = Number(new URL(svc.url).port);
  const payload = JSON.stringify({
    streamName: 'inflight',
    region: 'here',
    streams: [{ name: 'inflight_1', level: 1, videoBR: 1_000_000, videoWidth: 640, videoHeight: 360, videoFPS: 30, audioBR: 64_000 }],
  });
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
  socket.write(
    `POST /as/v1/provision/default HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${payload.length}\r\nExpect: 100-continue\r\n\r\n`,
  );
  await continued;
  answer = '';

  const stoppedAt = Date.now();
  svc.proc.kill('SIGTERM');
  await until(() => refused(port), 10_000, 'the port to refuse new connections');
  socket.write(payload);
  await closed;
  t.regex(answer, /^HTTP\/1\.1 201 /, 'the request in flight was answered');
  const exit = await Promise.race([svc.exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 20_000))]);
  t.is(exit, 0, `exit code (output: ${svc.output.slice(-5).join(' | ')})`);
  t.log(`stopped ${Date.now() - stoppedAt} ms after SIGTERM`);
  t.is(killAgentsOf(own.dataDir), 0, 'no local node outlives the service');
  t.true(svc.output.some((l) => l.includes('"msg":"stopped"')));
  t.false(
    svc.output.some((l) => l.includes('at the shutdown timeout')),
    'the drain finished by itself, not by the shutdown timeout',
  );

  svc = await own.spawn();
  token = await own.login();
  for (const name of ['before', 'inflight']) t.is((await request(svc.url, 'GET', `/as/v1/provision/default/${name}`, undefined, { authorization: `Bearer ${token}` })).status, 200, name);
});
