// Gives every request an id (the caller's X-Request-Id if it is sane, else a new one), a logger
// that stamps it on every line, and one access-log line when the answer is sent.
import { randomUUID } from 'node:crypto';
import type { Next } from 'koa';
import type { Logger } from 'pino';
import type { Ctx } from '../context.js';

const SANE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface RequestObserver {
  (route: string, method: string, status: number, seconds: number): void;
}

export function requestContext(log: Logger, observe: RequestObserver, quietRoutes: ReadonlySet<string> = new Set()) {
  return async function requestContextMiddleware(ctx: Ctx, next: Next): Promise<void> {
    const started = performance.now();
    const given = ctx.get('x-request-id');
    ctx.requestId = SANE_ID.test(given) ? given : randomUUID();
    // The request's logger is made on first use: most lookups log nothing at the default level.
    let child: Logger | undefined;
    Object.defineProperty(ctx, 'log', { configurable: true, get: () => (child ??= log.child({ reqId: ctx.requestId })) });
    ctx.set('X-Request-Id', ctx.requestId);
    try {
      await next();
    } finally {
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
