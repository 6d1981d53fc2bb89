// Assertions shared by the HTTP tests.
import type { ExecutionContext } from 'ava';
import type { Reply } from './http.js';

export interface ProblemJson {
  type: string;
  title: string;
  status: number;
  code: string;
  detail: string;
  error: string;
  errorMessage: string;
  errors?: Array<{ path: string; message: string }>;
  requestId?: string;
}

/** The answer is an RFC 9457 problem with this status and code (docs/api.md). */
export function isProblem(t: ExecutionContext, r: Reply, status: number, code?: string): ProblemJson {
  t.is(r.status, status, r.text);
  t.regex(r.headers.get('content-type') ?? '', /^application\/problem\+json/);
  const p = r.json as ProblemJson;
  t.is(p.status, status);
  t.is(p.type, 'about:blank');
  t.is(typeof p.title, 'string');
  if (code) t.is(p.code, code);
  t.is(p.error, p.detail, '`error` repeats `detail` for Red5 clients');
  t.is(p.errorMessage, p.detail, '`errorMessage` repeats `detail` for older Red5 clients');
  t.false(/\/work\/|node_modules|at .*\(.*:\d+:\d+\)/.test(r.text), 'no internal path or stack');
  return p;
}
