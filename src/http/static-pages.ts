// The dashboard (/dashboard/) and the API docs page (/as/v1/docs): the files `npm run build` listed
// in its manifest (src/dashboard/manifest.ts), read once and served from memory by exact URL. A
// request's path is only ever a key into that list, never part of a file path, so nothing outside
// it can be reached whatever the path says. Pages carry their own Content-Security-Policy
// (security-headers.ts) and are never cached; assets have content-hashed names and are cached
// for good. Mounted after the API's router, so that API requests never pass through here.
import type { Next } from 'koa';
import type { Logger } from 'pino';
import { DASHBOARD_DIR, loadManifest, type LoadedEntry } from '../dashboard/manifest.js';
import type { Ctx } from './context.js';
import { PAGE_POLICIES } from './middleware/security-headers.js';
import { Problem, problems } from './problem.js';

export const DASHBOARD_URL = '/dashboard/';
export const DOCS_URL = '/as/v1/docs';
const ASSETS = '/dashboard/assets/';

/** Addresses people type, sent where the page is. `/` may serve something else one day: 302. */
const REDIRECTS = new Map<string, { to: string; status: 301 | 302 }>([
  ['/', { to: DASHBOARD_URL, status: 302 }],
  ['/dashboard', { to: DASHBOARD_URL, status: 301 }],
  [`${DOCS_URL}/`, { to: DOCS_URL, status: 301 }],
]);

/** The label of a request here in logs and metrics: a few fixed values, whatever the path. */
function routeOf(path: string): string | null {
  if (REDIRECTS.has(path)) return 'redirect';
  if (path === DOCS_URL) return DOCS_URL;
  if (path.startsWith(ASSETS)) return `${ASSETS}*`;
  if (path.startsWith(DASHBOARD_URL)) return DASHBOARD_URL;
  return null;
}

export interface StaticPagesOptions {
  log: Logger;
  /** The build directory (dist/dashboard/ of the project). */
  dir?: string;
}

export function staticPages(options: StaticPagesOptions) {
  // Loaded on first use: most services (and tests) never serve a page.
  let files: Map<string, LoadedEntry> | null | undefined;
  const load = (): Map<string, LoadedEntry> | null => {
    if (files !== undefined) return files;
    try {
      files = loadManifest(options.dir ?? DASHBOARD_DIR);
    } catch (err) {
      files = null;
      options.log.warn({ err: (err as Error).message }, 'the dashboard is not built (npm run build): /dashboard/ and /as/v1/docs answer 404');
    }
    return files;
  };

  return async function staticPagesMiddleware(ctx: Ctx, next: Next): Promise<void> {
    const path = ctx.path;
    const route = routeOf(path);
    if (route === null) return next();
    ctx.state.route = route;
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      throw new Problem(405, 'METHOD_NOT_ALLOWED', `${ctx.method.slice(0, 20)} is not allowed here; allowed: GET, HEAD`, { headers: { Allow: 'GET, HEAD' } });
    }
    const redirect = REDIRECTS.get(path);
    if (redirect) {
      ctx.redirect(redirect.to);
      ctx.status = redirect.status;
      return;
    }
    const loaded = load();
    const entry = loaded?.get(path);
    if (!entry) throw problems.notFound('NOT_FOUND', loaded ? `no file ${path.slice(0, 200)}` : 'the dashboard is not built on this server (npm run build)');
    ctx.status = 200;
    if (entry.page) {
      ctx.set('Content-Security-Policy', PAGE_POLICIES[entry.page]);
      ctx.set('Cross-Origin-Opener-Policy', 'same-origin');
    } else {
      ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
      ctx.set('ETag', `"${entry.hash}"`);
      if (ctx.fresh) {
        ctx.status = 304;
        return;
      }
    }
    ctx.type = entry.type;
    if (entry.gzipBody) {
      ctx.vary('Accept-Encoding');
      if (ctx.acceptsEncodings('gzip', 'identity') === 'gzip') {
        ctx.set('Content-Encoding', 'gzip');
        ctx.body = entry.gzipBody;
        return;
      }
    }
    ctx.body = entry.body;
  };
}
