// The dashboard and the API docs page over real HTTP (README: dashboard; docs/dashboard.md): only
// the files the build listed are served, whatever the path says; pages carry a CSP of their own
// that allows this origin only and no inline script, and are never cached; assets are cached for
// good under content-hashed names; the API's answers keep `default-src 'none'`.
import test from 'ava';
import { isProblem } from '../helpers/assert.js';
import { rawRequest, request } from '../helpers/http.js';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
test.before(async () => {
  svc = await startTestService();
});
test.after.always(() => svc?.close());

/** The script and stylesheet URLs a page names. */
const assetsOf = (html: string) => [...html.matchAll(/(?:src|href)="(\/[^"]+)"/g)].map((m) => m[1]!).filter((u) => u.startsWith('/dashboard/assets/'));

test('/ and /dashboard lead to /dashboard/, and /as/v1/docs/ to /as/v1/docs', async (t) => {
  for (const [from, to, status] of [
    ['/', '/dashboard/', 302],
    ['/dashboard', '/dashboard/', 301],
    ['/as/v1/docs/', '/as/v1/docs', 301],
  ] as const) {
    const r = await rawRequest(svc.url, { method: 'GET', path: from, headers: {} });
    t.is(r.status, status, from);
    t.is(r.headers.location, to, from);
  }
});

test('the dashboard page: its own CSP (this origin only, no inline script), never cached, and its assets answer', async (t) => {
  const r = await request(svc.url, 'GET', '/dashboard/');
  t.is(r.status, 200);
  t.regex(r.headers.get('content-type') ?? '', /^text\/html/);
  t.is(r.headers.get('cache-control'), 'no-store');
  const csp = r.headers.get('content-security-policy') ?? '';
  t.regex(csp, /default-src 'none'/);
  t.regex(csp, /script-src 'self'(;|$)/);
  t.regex(csp, /connect-src 'self'(;|$)/);
  t.regex(csp, /frame-ancestors 'none'/);
  t.notRegex(csp, /unsafe-inline|unsafe-eval|\*|https?:|data:/, 'nothing but this origin');
  t.notRegex(r.text, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
  t.notRegex(r.text, /https?:\/\//, 'nothing from elsewhere');
  const assets = assetsOf(r.text);
  t.true(assets.some((u) => u.endsWith('.js')) && assets.some((u) => u.endsWith('.css')), assets.join(' '));
  for (const url of assets) {
    const a = await request(svc.url, 'GET', url);
    t.is(a.status, 200, url);
    t.is(a.headers.get('cache-control'), 'public, max-age=31536000, immutable', url);
    t.regex(a.headers.get('etag') ?? '', /^"[A-Za-z0-9_-]+"$/, url);
    t.is(a.headers.get('x-content-type-options'), 'nosniff', url);
  }
});

test('the docs page renders the OpenAPI document with swagger-ui served from here, under a CSP of its own', async (t) => {
  const r = await request(svc.url, 'GET', '/as/v1/docs');
  t.is(r.status, 200);
  t.regex(r.headers.get('content-type') ?? '', /^text\/html/);
  const csp = r.headers.get('content-security-policy') ?? '';
  t.regex(csp, /script-src 'self'(;|$)/);
  t.notRegex(csp, /unsafe-inline|unsafe-eval|https?:/);
  t.notRegex(r.text, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
  const assets = assetsOf(r.text);
  t.true(
    assets.some((u) => /swagger-ui-bundle-[\w-]+\.js$/.test(u)),
    assets.join(' '),
  );
  for (const url of assets) t.is((await request(svc.url, 'GET', url)).status, 200, url);
});

test('an asset is revalidated by its ETag and sent compressed to those who accept gzip', async (t) => {
  const [js] = assetsOf((await request(svc.url, 'GET', '/dashboard/')).text).filter((u) => u.endsWith('.js'));
  const plain = await rawRequest(svc.url, { method: 'GET', path: js!, headers: {} });
  t.is(plain.status, 200);
  t.is(plain.headers['content-encoding'], undefined);
  const etag = String(plain.headers.etag);
  t.is((await rawRequest(svc.url, { method: 'GET', path: js!, headers: { 'if-none-match': etag } })).status, 304);
  const gz = await rawRequest(svc.url, { method: 'GET', path: js!, headers: { 'accept-encoding': 'gzip, br' } });
  t.is(gz.headers['content-encoding'], 'gzip');
  t.regex(String(gz.headers.vary), /Accept-Encoding/i);
  const head = await rawRequest(svc.url, { method: 'HEAD', path: js!, headers: {} });
  t.is(head.status, 200);
  t.is(head.text, '');
});

test('nothing but the listed files: traversal, the manifest and unknown names are 404 problems; other methods 405', async (t) => {
  for (const path of [
    '/dashboard/manifest.json',
    '/dashboard/index.html',
    '/dashboard/../package.json',
    '/dashboard/%2e%2e/%2e%2e/package.json',
    '/dashboard/assets/..%2f..%2fmanifest.json',
    '/dashboard/assets/%2e%2e/%2e%2e/%2e%2e/src/main.ts',
    '/dashboard/assets/',
    '/dashboard/assets/nope.js',
    '/dashboard//etc/passwd',
    '/dashboard/assets/%00',
  ]) {
    const raw = await rawRequest(svc.url, { method: 'GET', path, headers: {} });
    t.is(raw.status, 404, path);
    t.regex(String(raw.headers['content-type']), /^application\/problem\+json/, path);
    t.notRegex(raw.text, /"version"|switchyard\.token|import /, path);
  }
  const post = await request(svc.url, 'POST', '/dashboard/', {});
  isProblem(t, post, 405, 'METHOD_NOT_ALLOWED');
  t.is(post.headers.get('allow'), 'GET, HEAD');
  isProblem(t, await request(svc.url, 'DELETE', '/as/v1/docs'), 405, 'METHOD_NOT_ALLOWED');
});

test("the API's answers keep the API's policy", async (t) => {
  const r = await svc.get('/as/v1/openapi.json', null);
  t.is(r.headers.get('content-security-policy'), "default-src 'none'; frame-ancestors 'none'");
  t.is(r.headers.get('cache-control'), 'no-store');
});
