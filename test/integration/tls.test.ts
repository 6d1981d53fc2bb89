// The HTTPS listener (server.tls): it answers like the plain one, with HSTS, and a client that
// opens a connection but never finishes its TLS handshake is cut off after headersTimeout (Node's
// default is 120 s, and the 408 the server then tried to write waited for a handshake for ever).
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { connect } from 'node:net';
import test from 'ava';
import { projectPath } from '../../src/paths.js';
import { startTestService } from '../helpers/service.js';

const cert = projectPath('test', 'fixtures', 'tls', 'cert.pem');
const key = projectPath('test', 'fixtures', 'tls', 'key.pem');

const start = () => startTestService({ config: { server: { host: '127.0.0.1', port: 0, headersTimeout: '1s', requestTimeout: '2s', tls: { cert, key, port: 0 } } } });

function get(port: number, path: string): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, servername: 'localhost', ca: readFileSync(cert), timeout: 10_000 }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', reject);
    req.end();
  });
}

/** A TCP connection that sends nothing: resolves with how long the server kept it open. */
function silent(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    socket.setTimeout(15_000, () => socket.destroy(new Error('the server kept a silent connection for 15 s')));
    socket.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' ? undefined : reject(err)));
    socket.on('close', () => resolve(Date.now() - started));
  });
}

test('HTTPS answers with HSTS; a handshake that never comes is cut off after headersTimeout', async (t) => {
  const svc = await start();
  t.teardown(() => svc.close());
  const port = svc.service.tlsPort!;
  t.truthy(port);
  const health = await get(port, '/as/v1/healthz');
  t.is(health.status, 200);
  t.is(health.headers['strict-transport-security'], 'max-age=31536000');
  const unknown = await get(port, '/nowhere');
  t.is(unknown.status, 404);
  t.regex(String(unknown.headers['content-type']), /^application\/problem\+json/);

  const kept = await silent(port);
  t.true(kept >= 900, `closed after ${kept} ms, not before the timeout`);
});
