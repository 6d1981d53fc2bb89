// The outer frame of every request, in one middleware (one async frame, not three): a request id
// (the caller's X-Request-Id if it is sane, else a new one), a logger that stamps it on every line
// (made only when something logs), the constant security headers, errors as problem+json, and one
// access-log line when the answer is sent.
import { randomBytes } from 'node:crypto';
import type Koa from 'koa';
import type { Next } from 'koa';
import type { Logger } from 'pino';
import type { AppContextExtras, AppState, Ctx } from '../context.js';
import { answerProblem } from './errors.js';

const SANE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export type RequestObserver = (route: string, method: string, status: number, seconds: number) => void;

/** Request ids: this process's random prefix and a counter; unique in the logs, and cheap. */
function requestIds(): () => string {
  const prefix = randomBytes(6).toString('base64url');
  let n = 0;
  return () => `${prefix}-${(++n).toString(36)}`;
}

/** `ctx.log`: a child logger with the request id, made on first use, defined once on the prototype. */
export function installRequestLogger(app: Koa<AppState, AppContextExtras>, log: Logger): void {
  Object.defineProperty(app.context, 'log', {
    configurable: true,
    get(this: Ctx & { _log?: Logger }) {
      return (this._log ??= log.child({ reqId: this.requestId }));
    },
  });
}

export function requestFrame(log: Logger, observe: RequestObserver, headers: Record<string, string>, quietRoutes: ReadonlySet<string> = new Set(), stopping?: AbortSignal) {
  const nextId = requestIds();
  const names = Object.keys(headers);
  const values = Object.values(headers);
  return async function requestFrameMiddleware(ctx: Ctx, next: Next): Promise<void> {
    const started = performance.now();
    const given = ctx.get('x-request-id');
    ctx.requestId = given !== '' && SANE_ID.test(given) ? given : nextId();
    const res = ctx.res;
    res.setHeader('X-Request-Id', ctx.requestId);
    for (let i = 0; i < names.length; i++) res.setHeader(names[i]!, values[i]!);
    try {
      await next();
      // The router answers unknown paths and methods with a bare status (and Allow): give them a body.
      if (ctx.body === undefined || ctx.body === null) answerBareStatus(ctx);
    } catch (err) {
      answerProblem(ctx, err);
    } finally {
      // While stopping, no connection is kept for another request: the drain ends with this answer.
      if (stopping?.aborted && !ctx.headerSent) ctx.set('Connection', 'close');
      const seconds = (performance.now() - started) / 1000;
      const route = ctx.state.route ?? 'unmatched';
      observe(route, ctx.method, ctx.status, seconds);
      const quiet = quietRoutes.has(route);
      if (quiet ? log.isLevelEnabled('debug') : log.isLevelEnabled('info')) {
        const line = { method: ctx.method, route, status: ctx.status, ms: Math.round(seconds * 1e4) / 10 };
        if (quiet) ctx.log.debug(line, 'request');
        else ctx.log.info(line, 'request');
      }
    }
  };
}

function answerBareStatus(ctx: Ctx): void {
  if (ctx.status === 404) answerProblem(ctx, { status: 404, code: 'NOT_FOUND', detail: `no route for ${ctx.method} ${ctx.path.slice(0, 200)}` });
  // An unknown method is the client's doing: 405 (not the router's 501), so no 5xx is client-made.
  else if (ctx.status === 405 || ctx.status === 501)
    answerProblem(ctx, { status: 405, code: 'METHOD_NOT_ALLOWED', detail: `${ctx.method.slice(0, 20)} is not allowed here; allowed: ${ctx.response.get('Allow')}` });
}
