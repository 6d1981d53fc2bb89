// What Node's HTTP layer answers before Koa: slow clients, oversized headers, malformed HTTP and
// unmet expectations all get a problem+json with the security headers, within bounded time.
import { connect, type Socket } from 'node:net';
import test from 'ava';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
test.before(async () => {
  svc = await startTestService({ config: { server: { host: '127.0.0.1', port: 0, headersTimeout: '1s', requestTimeout: '2s' } } });
});
test.after.always(() => svc.close());

interface RawAnswer {
  status: number;
  headers: Map<string, string>;
  body: string;
  /** ms from the first byte sent to the socket's end. */
  after: number;
}

/** Sends `chunks` (the first at once, none after) and reads until the server closes. */
function raw(chunks: string[]): Promise<RawAnswer> {
  const url = new URL(svc.url);
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(Number(url.port), url.hostname);
    const started = Date.now();
    let text = '';
    socket.setTimeout(15_000, () => socket.destroy(new Error('the server neither answered nor closed within 15 s')));
    socket.on('connect', () => {
      for (const c of chunks) socket.write(c);
    });
    socket.on('data', (d) => (text += d.toString()));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = text.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers = new Map(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()] as const));
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body, after: Date.now() - started });
    });
  });
}

function isProblemAnswer(t: import('ava').ExecutionContext, a: RawAnswer, status: number, code: string): void {
  t.is(a.status, status, a.body);
  t.is(a.headers.get('content-type'), 'application/problem+json');
  t.is(a.headers.get('x-content-type-options'), 'nosniff');
  t.truthy(a.headers.get('content-security-policy'));
  const p = JSON.parse(a.body) as { status: number; code: string; detail: string; error: string };
  t.like(p, { status, code });
  t.is(p.detail, p.error);
}

// "Soon" is not asserted against the wall clock (a loaded machine may be slow to answer): the
// answer coming at all, before the client's own 15 s guard, is what shows the server cut it off.
test('headers that never finish are cut off with 408 after headersTimeout', async (t) => {
  const a = await raw(['GET /as/v1/healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ']);
  isProblemAnswer(t, a, 408, 'REQUEST_TIMEOUT');
  t.log(`answered after ${a.after} ms`);
});

test('a body that never finishes is cut off with 408, and nothing is written', async (t) => {
  const body = JSON.stringify({ streamName: 'slowpoke', region: 'r1', streams: [] });
  const a = await raw([
    `POST /as/v1/provision/g HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${svc.adminToken}\r\nContent-Type: application/json\r\nContent-Length: ${body.length + 10}\r\n\r\n${body}`,
  ]);
  isProblemAnswer(t, a, 408, 'REQUEST_TIMEOUT');
  t.log(`answered after ${a.after} ms`);
  t.is((await svc.get('/as/v1/provision/g/slowpoke')).status, 404);
  // The request finished inside the service too (it does not wait for the body for ever).
  const metrics = (await svc.get('/as/v1/metrics')).text;
  t.regex(metrics, /switchyard_http_requests_total\{method="POST",route="\/as\/v1\/provision\/\{nodeGroup\}",status="408"\} 1/);
});

test('oversized headers are a 431, malformed HTTP or an HTTP/1.1 request without Host a 400, an unmet Expect a 417, CONNECT a 405', async (t) => {
  isProblemAnswer(t, await raw([`GET /as/v1/healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`]), 431, 'HEADERS_TOO_LARGE');
  isProblemAnswer(t, await raw(['GET /as/v1/healthz HTTP/1.1\r\nHost x\r\n\r\n']), 400, 'BAD_REQUEST');
  isProblemAnswer(t, await raw(['GARBAGE\r\n\r\n']), 400, 'BAD_REQUEST');
  isProblemAnswer(t, await raw(['GET /as/v1/healthz HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nConnection: close\r\n\r\n']), 417, 'EXPECTATION_FAILED');
  isProblemAnswer(t, await raw(['GET /as/v1/healthz HTTP/1.1\r\n\r\n']), 400, 'BAD_REQUEST');
  isProblemAnswer(t, await raw(['CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n']), 405, 'METHOD_NOT_ALLOWED');
  t.is((await raw(['GET /as/v1/healthz HTTP/1.0\r\nConnection: close\r\n\r\n'])).status, 200, 'HTTP/1.0 needs no Host');
});

test('the server still answers while slow clients hold sockets', async (t) => {
  const slow = Array.from({ length: 20 }, () => raw(['GET /as/v1/healthz HTTP/1.1\r\nHost: x\r\n']));
  const r = await svc.get('/as/v1/healthz');
  t.is(r.status, 200);
  for (const a of await Promise.all(slow)) t.is(a.status, 408);
});
