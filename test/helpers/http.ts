// Real HTTP requests for tests, answering status, headers and the parsed body; rawRequest sends
// with node:http, so that paths, methods and headers reach the server exactly as given (fetch
// would normalise or refuse some).
import { request as httpRequest } from 'node:http';

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
  return replyOf(res.status, res.headers, await res.text());
}

/** A Reply: the body parsed when it is JSON. */
export function replyOf(status: number, headers: Headers, text: string): Reply {
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status, headers, text, json };
}

/** Fields of an object answer, for assertions. */
export const body = <T = Record<string, unknown>>(r: Reply): T => r.json as T;

/** A client connecting to a lookup answer's `url` on a simulated node: a POST there opens its session. */
export const openSession = (url: string): Promise<Reply> => request(new URL(url).origin, 'POST', new URL(url).pathname + new URL(url).search);

export interface RawRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export interface RawReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

export function rawRequest(base: string, r: RawRequest, timeoutMs = 10_000): Promise<RawReply> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method: r.method,
        path: r.path,
        headers: { ...r.headers, ...(r.body !== undefined ? { 'content-length': String(Buffer.byteLength(r.body)) } : {}) },
        agent: false,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
        res.on('error', reject);
      },
    );
    // A request that happens to be a whole WebSocket handshake may open a node channel.
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 101, headers: res.headers, text: '' });
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms: ${r.method} ${r.path}`)));
    req.on('error', reject);
    req.end(r.body);
  });
}
