// Real HTTP requests for tests, answering status, headers and the parsed body.
export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

export async function request(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const init: RequestInit = { method, headers: { ...headers }, signal: AbortSignal.timeout(15_000) };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
  }
  const res = await fetch(base + path, init);
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** Fields of an object answer, for assertions. */
export const body = <T = Record<string, unknown>>(r: Reply): T => r.json as T;
