// Errors as RFC 9457 problem details (docs/api.md). Handlers throw a Problem; the error
// middleware writes it. `error` and `errorMessage` repeat `detail` for Red5 Stream Manager 2.0
// clients: current ones read `error`, older ones `errorMessage` (docs/migrating-from-red5-sm2.md).
import { STATUS_CODES } from 'node:http';

export interface FieldProblem {
  path: string;
  message: string;
}

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

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  code: string;
  detail: string;
  error: string;
  errorMessage: string;
  errors?: FieldProblem[];
  requestId?: string;
}

export function problemBody(p: Problem, requestId?: string): ProblemBody {
  return {
    type: 'about:blank',
    title: STATUS_CODES[p.status] ?? 'Error',
    status: p.status,
    code: p.code,
    detail: p.detail,
    error: p.detail,
    errorMessage: p.detail,
    ...(p.extra.errors ? { errors: p.extra.errors } : {}),
    ...(requestId ? { requestId } : {}),
  };
}
