// The body of every error answer (RFC 9457 problem details, docs/api.md), declared once by
// ProblemSchema (./api.ts, which the OpenAPI document shows) and built once here: by the front
// end's error middleware and the answers Node's parser gives before Koa (src/http), by a cluster
// instance still waiting for NATS (src/cluster/waiting-server.ts), and by a node agent's own
// endpoints (src/agent). `error` and `errorMessage` repeat `detail` for Red5 Stream Manager 2.0
// clients: current ones read `error`, older ones `errorMessage` (docs/migrating-from-red5-sm2.md).
import { STATUS_CODES } from 'node:http';
import type { Static } from 'typebox';
import type { ProblemSchema } from './api.js';

/** The media type of every error answer. */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export type ProblemBody = Static<typeof ProblemSchema>;

/** One field's complaint in a VALIDATION_FAILED answer. */
export type FieldProblem = NonNullable<ProblemBody['errors']>[number];

/** What a problem says (the front end's Problem is one). */
export interface ProblemFacts {
  status: number;
  code: string;
  detail: string;
  errors?: readonly FieldProblem[] | undefined;
}

export function problemBody({ status, code, detail, errors }: ProblemFacts, requestId?: string): ProblemBody {
  return {
    type: 'about:blank',
    title: STATUS_CODES[status] ?? 'Error',
    status,
    code,
    detail,
    error: detail,
    errorMessage: detail,
    ...(errors ? { errors: [...errors] } : {}),
    ...(requestId ? { requestId } : {}),
  };
}

/** The body as text, for servers that answer outside Koa. */
export function problemJson(facts: ProblemFacts): string {
  return JSON.stringify(problemBody(facts));
}

/** A problem with no code of its own, named for its status (404: NOT_FOUND), as a node agent's endpoints answer. */
export function statusProblem(status: number, detail: string): ProblemFacts {
  return { status, code: (STATUS_CODES[status] ?? 'Error').toUpperCase().replace(/[^A-Z]+/g, '_'), detail };
}
