// The soak's requests outside the load: the admin's login, and single calls (the churn's, the
// publishers' lookups) whose status is judged against what they may answer, as the load's are.
import { BENCH_PASSWORD } from './servers.js';
import type { Statuses } from './statuses.js';

export interface Admin {
  token: string;
  authorization: string;
  /** An admin or app call outside the load; its status is judged against what it may answer. */
  call(kind: string, method: string, path: string, expect: number[], body?: unknown): Promise<{ status: number; text: string }>;
}

/** Logs in as the bench's admin; every call made through the result is recorded in `statuses`. */
export async function adminSession(url: string, statuses: Statuses): Promise<Admin> {
  const login = await fetch(`${url}/as/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: BENCH_PASSWORD }) });
  if (!login.ok) throw new Error(`login: ${login.status} ${await login.text()}`);
  const token = ((await login.json()) as { accessToken: string }).accessToken;
  const authorization = `Bearer ${token}`;

  async function call(kind: string, method: string, path: string, expect: number[], body?: unknown): Promise<{ status: number; text: string }> {
    try {
      const res = await fetch(url + path, {
        method,
        headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      statuses.record(kind, res.status, expect.includes(res.status) ? 'ok' : 'unexpected', `${method} ${path}`, text);
      return { status: res.status, text };
    } catch (err) {
      statuses.record(kind, 'socket error', 'unexpected', `${method} ${path}: ${(err as Error).message}`);
      return { status: 0, text: '' };
    }
  }
  return { token, authorization, call };
}

/** The node a lookup's answer names (cheap: no JSON parse on the load's hot path). */
export function nodeIdOf(body: string): string | null {
  const i = body.indexOf('"nodeId":"');
  return i < 0 ? null : body.slice(i + 10, body.indexOf('"', i + 10));
}
