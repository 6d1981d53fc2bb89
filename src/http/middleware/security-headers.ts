// Headers for a JSON-only API: nothing may be sniffed, framed, cached or referred.
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
