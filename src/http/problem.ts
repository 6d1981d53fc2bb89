// Errors as RFC 9457 problem details (docs/api.md). Handlers throw a Problem; the error
// middleware writes it. `error` and `errorMessage` repeat `detail` for Red5 Stream Manager 2.0
// clients: current ones read `error`, older ones `errorMessage` (docs/migrating-from-red5-sm2.md).
import { STATUS_CODES } from 'node:http';
import type { Static } from 'typebox';
import type { ProblemSchema } from '../schemas/api.js';

/** The media type of every error answer, from Koa's routes and from the raw servers alike. */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** One field's complaint in a VALIDATION_FAILED answer. */
export type FieldProblem = NonNullable<ProblemBody['errors']>[number];

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

/** The body's shape is declared once, by the schema the OpenAPI document shows. */
export type ProblemBody = Static<typeof ProblemSchema>;

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

/** The body as text, for the servers that answer outside Koa (server.ts, cluster/waiting-server.ts). */
export function problemJson(p: Problem): string {
  return JSON.stringify(problemBody(p));
}
