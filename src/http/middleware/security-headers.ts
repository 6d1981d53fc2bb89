// Headers for a JSON-only API: nothing may be sniffed, framed, cached or referred.
import type { PageKind } from '../../dashboard/manifest.js';

export function securityHeaders(tls: boolean): Record<string, string> {
  return {
    'X-Content-Type-Options': 'nosniff',
    'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'no-referrer',
    'Cross-Origin-Resource-Policy': 'same-origin',
    'Cache-Control': 'no-store',
    ...(tls ? { 'Strict-Transport-Security': 'max-age=31536000' } : {}),
  };
}

/**
 * The policies of the two HTML pages the service serves (src/http/static-pages.ts), in place of
 * the API's `default-src 'none'`: scripts, styles, images and API calls from this origin only; no
 * inline script, no eval, no frames, no other origin. The docs page adds what swagger-ui needs:
 * the data: images its stylesheet embeds.
 */
export const PAGE_POLICIES: Record<PageKind, string> = {
  dashboard: "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  docs: "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
};
