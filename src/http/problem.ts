// Errors as RFC 9457 problem details (docs/api.md). Handlers throw a Problem; the error
// middleware writes it, with the body every error answer has (src/schemas/problem.ts).
import type { FieldProblem } from '../schemas/problem.js';

export class Problem extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly extra: { errors?: FieldProblem[]; retryAfter?: number; headers?: Record<string, string> } = {},
  ) {
    super(detail);
    this.name = 'Problem';
  }

  /** The field problems of a VALIDATION_FAILED answer (what problemBody reads). */
  get errors(): readonly FieldProblem[] | undefined {
    return this.extra.errors;
  }
}

export const problems = {
  validation: (errors: readonly FieldProblem[]) =>
    new Problem(400, 'VALIDATION_FAILED', errors.map((e) => `${e.path} ${e.message}`).join('; '), { errors: errors.map(({ path, message }) => ({ path, message })) }),
  /** No token at all: the challenge names only the scheme (RFC 6750 §3). */
  noToken: () => new Problem(401, 'UNAUTHORIZED', 'a valid bearer token is required (POST /as/v1/auth/login)', { headers: { 'WWW-Authenticate': 'Bearer realm="switchyard"' } }),
  /** A token that is malformed, forged, expired or revoked. */
  badToken: (detail: string, code: 'UNAUTHORIZED' | 'TOKEN_EXPIRED' = 'UNAUTHORIZED') =>
    new Problem(401, code, detail, { headers: { 'WWW-Authenticate': `Bearer realm="switchyard", error="invalid_token", error_description="${detail.replace(/["\\]/g, '')}"` } }),
  /** A wrong user name or password: the challenge says how to get a token (docs/api.md). */
  badCredentials: (detail: string) => new Problem(401, 'INVALID_CREDENTIALS', detail, { headers: { 'WWW-Authenticate': 'Bearer realm="switchyard"' } }),
  forbidden: (detail: string, code = 'FORBIDDEN') => new Problem(403, code, detail),
  notFound: (code: string, detail: string) => new Problem(404, code, detail),
  notReady: (detail = 'the service is starting or stopping', retryAfter = 1) => new Problem(503, 'NOT_READY', detail, { retryAfter }),
};
