// Headers for a JSON-only API: nothing may be sniffed, framed, cached or referred.
import type { Next } from 'koa';
import type { Ctx } from '../context.js';

export function securityHeaders(tls: boolean) {
  const headers: Record<string, string> = {
    'X-Content-Type-Options': 'nosniff',
    'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'no-referrer',
    'Cross-Origin-Resource-Policy': 'same-origin',
    'Cache-Control': 'no-store',
  };
  if (tls) headers['Strict-Transport-Security'] = 'max-age=31536000';
  const entries = Object.entries(headers);
  return async function securityHeadersMiddleware(ctx: Ctx, next: Next): Promise<void> {
    // Straight onto the response: these are constants, Koa's checks add nothing.
    for (const [name, value] of entries) ctx.res.setHeader(name, value);
    await next();
  };
}
