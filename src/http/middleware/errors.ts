// Everything thrown on the way to an answer becomes a problem+json answer (docs/api.md). Problems
// keep their status and code; errors from Koa and its middleware keep their 4xx status; anything
// else is a bug: logged with the request id, answered 500 with the id and nothing internal.
import type { Ctx } from '../context.js';
import { Problem } from '../problem.js';
import { PROBLEM_CONTENT_TYPE, problemBody } from '../../schemas/problem.js';
import { ActorUnavailable } from '../../../actors/group-handle.js';
import { StoreUnavailable } from '../../store/failures.js';
import { PoolBusy } from '../../auth/passwords.js';

const CODES: Record<number, string> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  406: 'NOT_ACCEPTABLE',
  408: 'REQUEST_TIMEOUT',
  411: 'LENGTH_REQUIRED',
  413: 'PAYLOAD_TOO_LARGE',
  414: 'URI_TOO_LONG',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'RATE_LIMITED',
  501: 'NOT_IMPLEMENTED',
};

export function toProblem(err: unknown): Problem {
  if (err instanceof Problem) return err;
  if (err instanceof StoreUnavailable) return new Problem(503, 'STORE_UNAVAILABLE', `${err.message}; nothing was changed, reads go on`, { retryAfter: 5 });
  // Any call to a group actor that is (re)starting: not ready, never 500.
  if (err instanceof ActorUnavailable) return new Problem(503, 'NOT_READY', `node group '${err.group}' is restarting; retry shortly`, { retryAfter: 1 });
  // scrypt's bounded queue is full (a login storm): a login or a password change waits its turn.
  if (err instanceof PoolBusy) return new Problem(429, 'RATE_LIMITED', 'too many password checks at once; retry shortly', { retryAfter: 1 });
  const e = err as { status?: number; statusCode?: number; expose?: boolean; message?: string; headers?: Record<string, string>; code?: string; detail?: string };
  if (e && typeof e.status === 'number' && typeof e.code === 'string' && typeof e.detail === 'string') return new Problem(e.status, e.code, e.detail);
  const status = e?.status ?? e?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const detail = e.expose && e.message ? e.message : (CODES[status] ?? 'bad request').toLowerCase().replace(/_/g, ' ');
    return new Problem(status, CODES[status] ?? 'BAD_REQUEST', detail, e.headers ? { headers: e.headers } : {});
  }
  if (err instanceof URIError) return new Problem(400, 'BAD_REQUEST', 'the request path is not valid percent-encoding');
  return new Problem(500, 'INTERNAL', 'an internal error occurred; the request id identifies it in the logs');
}

export function answerProblem(ctx: Ctx, err: unknown): void {
  const problem = toProblem(err);
  if (problem.status >= 500 && problem.code === 'INTERNAL') ctx.log.error({ err }, 'request failed');
  else if (err instanceof StoreUnavailable) ctx.log.warn({ err: err.cause }, 'a data store write was refused');
  ctx.status = problem.status;
  if (problem.extra.headers) ctx.set(problem.extra.headers);
  if (problem.extra.retryAfter !== undefined) ctx.set('Retry-After', String(problem.extra.retryAfter));
  ctx.type = PROBLEM_CONTENT_TYPE;
  ctx.body = problemBody(problem, problem.status >= 500 ? ctx.requestId : undefined);
}
