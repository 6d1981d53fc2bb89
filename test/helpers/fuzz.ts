// Random HTTP requests for fuzzing a live server, sent with rawRequest (http.ts) so that paths,
// methods and headers reach the server exactly as generated.
import fc from 'fast-check';
import type { RawReply, RawRequest } from './http.js';

/** A path segment: names that fit, unicode, traversal, percent-escapes good and broken. */
const segment = fc.oneof(
  fc.constantFrom('g', 'default', 'cam1', 'o1', 'e1', 'r1', 'nope', '..', '.', '%2e%2e', '%00', '%E0%A4%A', '%', '%zz', '~', '_-.', 'a'.repeat(200), '__proto__', 'constructor'),
  fc.string({ unit: 'grapheme', maxLength: 20 }).map((s) => encodeURIComponent(s)),
  fc.stringMatching(/^[A-Za-z0-9._~-]{1,40}$/),
);

const pathArb = fc.oneof(
  fc.constantFrom(
    '/as/v1/auth/login',
    '/as/v1/auth/password',
    '/as/v1/streams',
    '/as/v1/nodegroups',
    '/as/v1/healthz',
    '/as/v1/readyz',
    '/as/v1/openapi.json',
    '/as/v1/metrics',
    '/',
    '/dashboard',
    '/dashboard/',
    '/as/v1/docs',
    '/as/v1',
    '/as/v1/',
    '//as//v1//streams',
  ),
  segment.map((a) => `/as/v1/streams/live/${a}/publish`),
  segment.map((a) => `/as/v1/streams/live/${a}/subscribe`),
  fc.tuple(segment, segment).map(([a, b]) => `/as/v1/streams/stream/${a}/${b}`),
  segment.map((a) => `/as/v1/provision/${a}`),
  fc.tuple(segment, segment).map(([a, b]) => `/as/v1/provision/${a}/${b}`),
  segment.map((a) => `/as/v1/nodegroups/${a}`),
  fc.tuple(segment, segment).map(([a, b]) => `/as/v1/nodegroups/${a}/nodes/${b}/token`),
  segment.map((a) => `/as/v1/nodes/${a}/events`),
  segment.map((a) => `/dashboard/assets/${a}`),
  fc.array(segment, { maxLength: 6 }).map((s) => `/${s.join('/')}`),
);

const queryValue = fc.oneof(
  fc.constantFrom('true', 'false', '', '1', '0', 'yes', 'r1', 'r1,r2', 'mars', '8.8.8.8', '::1', '999999999999999999999', '-1', '1e400', 'NaN', '%zz', 'g/cam1'),
  fc.string({ maxLength: 30 }).map(encodeURIComponent),
);
const queryArb = fc
  .array(fc.tuple(fc.constantFrom('transcode', 'region', 'strict', 'clientIp', 'nodeGroup', 'limit', 'after', 'since', 'types', 'x', '__proto__', 'constructor'), queryValue), { maxLength: 5 })
  .map((pairs) => (pairs.length === 0 ? '' : `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}`));

function deep(depth: number, open: string, close: string, inner: string): string {
  return open.repeat(depth) + inner + close.repeat(depth);
}

const bodyArb: fc.Arbitrary<string | undefined> = fc.oneof(
  fc.constant(undefined),
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc.constantFrom(
    '{"username":"admin","password":"x"}',
    '{"__proto__":{"admin":true}}',
    '{"constructor":{"prototype":{"polluted":true}}}',
    '{"streamName":"cam","region":"r1","streams":[{"name":"cam_1","level":1,"videoBR":1e400,"videoWidth":640,"videoHeight":360,"videoFPS":30,"audioBR":0}]}',
    '{"ready":true,"metrics":{"connections.publisher":1e308},"streams":[{"name":"x","subscribers":-1}]}',
    '{"a":1,"a":2}',
    '\uFEFF{}',
    'null',
    '[]',
    '"str"',
    '{',
    '',
    '\u0000',
  ),
  fc.integer({ min: 1, max: 100_000 }).map((d) => deep(d, '[', ']', '1')),
  fc.integer({ min: 1, max: 30_000 }).map((d) => deep(d, '{"a":', '}', '1')),
  fc.string({ unit: 'grapheme', maxLength: 200 }),
  fc.record({ streamName: fc.string(), region: fc.string(), streams: fc.array(fc.dictionary(fc.string(), fc.jsonValue()), { maxLength: 20 }) }).map((v) => JSON.stringify(v)),
);

const headerValue = fc.oneof(
  fc.constantFrom(
    '',
    '0',
    '-1',
    '1e400',
    'gzip',
    'deflate',
    'br',
    'identity',
    'chunked',
    '100-continue',
    'close',
    'keep-alive',
    'bytes=0-1',
    '*',
    'null',
    'undefined',
    '__proto__',
    'application/json',
    'upgrade',
    'Upgrade, keep-alive',
    'websocket',
    'h2c',
    '13',
    'dGhlIHNhbXBsZSBub25jZQ==',
  ),
  // Header values may hold any visible character, spaces and tabs (RFC 9110 field-vchar).
  fc.string({ maxLength: 60 }).map((s) => s.replace(/[^\x20-\x7e\t]/g, '?').trim()),
  fc.constant('x'.repeat(8000)),
);
const headerName = fc.oneof(
  fc.constantFrom(
    'accept',
    'accept-encoding',
    'content-encoding',
    'expect',
    'connection',
    'origin',
    'cookie',
    'range',
    'if-none-match',
    'if-modified-since',
    'x-http-method-override',
    'forwarded',
    'x-forwarded-proto',
    'x-forwarded-host',
    'x-real-ip',
    'upgrade',
    'sec-websocket-key',
    'sec-websocket-version',
    'sec-websocket-protocol',
    'te',
    'host',
    '__proto__',
    'constructor',
    'x-request-id',
  ),
  fc.stringMatching(/^[a-z0-9!#$%&'*+.^_`|~-]{1,30}$/),
);
/** Up to five extra headers: well-known ones with odd values, and made-up ones. */
const extraHeaders = fc.array(fc.tuple(headerName, headerValue), { maxLength: 5 }).map((pairs) => {
  const out: Record<string, string> = {};
  // node:http sets these from the request itself; the server must cope with the rest.
  for (const [k, v] of pairs) if (k !== 'host' || v !== '') if (!['content-length', 'transfer-encoding'].includes(k)) out[k] = v;
  return out;
});

export function requestArb(tokens: readonly string[]): fc.Arbitrary<RawRequest> {
  const contentType = fc.constantFrom(
    undefined,
    'application/json',
    'application/json; charset=utf-8',
    'application/json; charset=latin1',
    'text/plain',
    'application/problem+json',
    'multipart/form-data; boundary=x',
    'application/x-www-form-urlencoded',
    '*/*',
    'application/vnd.x+json',
  );
  const authorization = fc.oneof(
    fc.constantFrom(undefined, 'Bearer', 'Bearer ', 'Basic YWRtaW46YWRtaW4=', 'Bearer a.b.c', `Bearer ${'x'.repeat(5000)}`),
    fc.constantFrom(...tokens).map((tk) => `Bearer ${tk}`),
    fc.string({ maxLength: 40 }).map((s) => `Bearer ${s.replace(/[^\x21-\x7e]/g, '')}`),
  );
  return fc
    .record({
      method: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'TRACE', 'PROPFIND', 'get'),
      path: pathArb,
      query: queryArb,
      contentType,
      authorization,
      forwarded: fc.option(fc.constantFrom('8.8.8.8', '1.2.3.4, 10.0.0.1', 'garbage', '::1'), { nil: undefined }),
      requestId: fc.option(
        fc.string({ maxLength: 200 }).map((s) => s.replace(/[^\x21-\x7e]/g, 'x')),
        { nil: undefined },
      ),
      body: bodyArb,
      // Upgrade requests leave Node's HTTP parser: the app must still answer them (the node channel).
      upgrade: fc.option(fc.constantFrom('websocket', 'WebSocket', 'h2c', 'websocket, h2c'), { nil: undefined, freq: 8 }),
      extra: extraHeaders,
    })
    .map((r) => ({
      method: r.method,
      path: r.path + r.query,
      headers: {
        ...r.extra,
        ...(r.contentType ? { 'content-type': r.contentType } : {}),
        ...(r.authorization ? { authorization: r.authorization } : {}),
        ...(r.forwarded ? { 'x-forwarded-for': r.forwarded } : {}),
        ...(r.requestId ? { 'x-request-id': r.requestId } : {}),
        ...(r.upgrade ? { connection: 'Upgrade', upgrade: r.upgrade } : {}),
      },
      ...(r.body !== undefined ? { body: r.body } : {}),
    }));
}

/** What every answer must be: no 5xx but the documented 503s, and errors as problem+json. */
export function checkReply(req: RawRequest, r: RawReply): string | null {
  if (r.status >= 500) {
    let code: unknown;
    try {
      code = (JSON.parse(r.text) as { code?: unknown }).code;
    } catch {
      code = undefined;
    }
    // HEAD answers carry no body: a documented 503 shows by its Retry-After there.
    const documented = code === 'NO_CAPACITY' || code === 'NOT_READY' || (req.method.toUpperCase() === 'HEAD' && r.headers['retry-after'] !== undefined);
    if (!(r.status === 503 && documented)) return `a ${r.status} for ${req.method} ${req.path}: ${r.text.slice(0, 300)}`;
  }
  if (r.status >= 400 && req.method.toUpperCase() !== 'HEAD') {
    if (!String(r.headers['content-type']).startsWith('application/problem+json')) return `a ${r.status} without problem+json for ${req.method} ${req.path}`;
    let p: { status?: number; code?: string; detail?: string; error?: string; errorMessage?: string };
    try {
      p = JSON.parse(r.text) as typeof p;
    } catch {
      return `an unparsable problem for ${req.method} ${req.path}: ${r.text.slice(0, 200)}`;
    }
    if (p.status !== r.status || typeof p.code !== 'string' || p.detail !== p.error || p.detail !== p.errorMessage) return `a malformed problem for ${req.method} ${req.path}: ${r.text.slice(0, 200)}`;
    if (/node_modules|\/work\/|\bat [\w.<>]+ \(/.test(r.text)) return `an internal detail leaked for ${req.method} ${req.path}: ${r.text.slice(0, 200)}`;
  }
  if (r.headers['x-powered-by'] !== undefined) return 'X-Powered-By is set';
  return null;
}
