// Reads a JSON body within the size limit. Not JSON → 415; over the limit → 413; broken JSON or
// prototype-pollution keys (`__proto__`, `constructor.prototype`) → 400 BAD_JSON.
import type { IncomingMessage } from 'node:http';
import getRawBody from 'raw-body';
import sjson from 'secure-json-parse';
import type { Ctx } from '../context.js';
import { Problem } from '../problem.js';

const JSON_TYPE = /^application\/(?:[a-z0-9.+-]*\+)?json$/i;

/** Body reads in progress, so that the server's request timeout can end one with a 408. */
const reading = new WeakMap<IncomingMessage, (err: Error) => void>();

/**
 * Ends the body read of a request the server gave up on (its body did not arrive within
 * requestTimeout); the route then answers 408 as usual. Without this, raw-body would wait for
 * ever: Node emits no 'aborted' in that case. False when no read is in progress.
 */
export function timeOutBodyRead(req: IncomingMessage): boolean {
  const fail = reading.get(req);
  if (!fail) return false;
  fail(Object.assign(new Error('the body did not arrive in time'), { type: 'request.timeout' }));
  return true;
}

function readBody(req: IncomingMessage, limit: number, length: string | undefined): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    reading.set(req, reject);
    getRawBody(req, { limit, length, encoding: 'utf-8' }).then(resolve, reject);
  }).finally(() => reading.delete(req));
}

/** A body as bytes (Terraform's state: src/http/routes/terraform-state.ts), ended like the others by the request timeout. */
export function readBytes(req: IncomingMessage, limit: number, length: string | undefined): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    reading.set(req, reject);
    getRawBody(req, { limit, length }).then(resolve, reject);
  }).finally(() => reading.delete(req));
}

export async function readJsonBody(ctx: Ctx, limit: number): Promise<unknown> {
  const header = ctx.get('content-type');
  const [type, ...params] = header.split(';').map((s) => s.trim());
  if (!type || !JSON_TYPE.test(type)) {
    throw new Problem(415, 'UNSUPPORTED_MEDIA_TYPE', `the body must be application/json${header ? `, not ${header.slice(0, 100)}` : ''}`);
  }
  const charset = params
    .find((p) => /^charset=/i.test(p))
    ?.slice(8)
    .replace(/"/g, '')
    .toLowerCase();
  if (charset && charset !== 'utf-8' && charset !== 'utf8') {
    throw new Problem(415, 'UNSUPPORTED_MEDIA_TYPE', `the body must be UTF-8, not ${charset.slice(0, 40)}`);
  }
  let text: string;
  try {
    text = await readBody(ctx.req, limit, ctx.get('content-length') || undefined);
  } catch (err) {
    const type = (err as { type?: string }).type;
    if (type === 'request.timeout') {
      ctx.set('Connection', 'close');
      throw new Problem(408, 'REQUEST_TIMEOUT', 'the request took too long to arrive');
    }
    if (type === 'entity.too.large') throw new Problem(413, 'PAYLOAD_TOO_LARGE', `the body is larger than ${limit} bytes`);
    if (type === 'request.size.invalid') throw new Problem(400, 'BAD_REQUEST', 'the body is shorter or longer than its Content-Length');
    throw new Problem(400, 'BAD_REQUEST', 'the body could not be read');
  }
  return parseJson(text, 'body');
}

/** A JSON document (a body, or a node channel's message) or the BAD_JSON problem saying why not. */
export function parseJson(text: string, what: 'body' | 'message'): unknown {
  if (text.trim() === '') throw new Problem(400, 'BAD_JSON', `the ${what} is empty; a JSON document is required`);
  try {
    return sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (err) {
    const message = (err as Error).message;
    const detail = /prototype/i.test(message) ? `the ${what} uses a forbidden key (__proto__ or constructor.prototype)` : `the ${what} is not valid JSON: ${message.slice(0, 200)}`;
    throw new Problem(400, 'BAD_JSON', detail);
  }
}
