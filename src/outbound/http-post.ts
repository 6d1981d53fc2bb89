// The service's own outbound requests (admission webhooks, event webhooks): a POST with a
// deadline, an answer read up to a bound, and every address the URL's name resolves to checked
// against src/policy/outbound-url.ts at connect time, so that DNS cannot send the service where
// the configured URL was refused from.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { forbiddenAddress } from '../policy/outbound-url.js';

export interface PostOptions {
  timeoutMs: number;
  allowLinkLocal?: boolean;
  /** The most of the answer's body kept (bytes); the rest is read and dropped. */
  maxAnswerBytes?: number;
}

export interface PostAnswer {
  status: number;
  body: string;
}

/** A refused destination (its address), a timeout, or a transport error: the request was not answered. */
export class OutboundError extends Error {
  constructor(
    message: string,
    readonly kind: 'forbidden' | 'timeout' | 'network',
  ) {
    super(message);
    this.name = 'OutboundError';
  }
}

function guardedLookup(allowLinkLocal: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const list = addresses as LookupAddress[];
      const allowed = allowLinkLocal ? list : list.filter((a) => forbiddenAddress(a.address) === null);
      if (allowed.length === 0) {
        const why = list.map((a) => forbiddenAddress(a.address)).find((w) => w !== null) ?? 'no address';
        return callback(new OutboundError(`${hostname} resolves to a forbidden address: ${why}`, 'forbidden') as NodeJS.ErrnoException, '', 0);
      }
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, allowed);
      callback(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
}

export function postJson(url: string, body: string, headers: Record<string, string>, options: PostOptions): Promise<PostAnswer> {
  const u = new URL(url);
  const request = u.protocol === 'https:' ? httpsRequest : httpRequest;
  const max = options.maxAnswerBytes ?? 64 * 1024;
  return new Promise<PostAnswer>((resolve, reject) => {
    const req = request(
      u,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'user-agent': 'switchyard', ...headers },
        lookup: guardedLookup(options.allowLinkLocal === true),
      },
      (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let received = 0;
        res.on('data', (c: Buffer) => {
          if (received < max) chunks.push(c.subarray(0, max - received));
          received += c.length;
        });
        res.on('end', () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
        });
        res.on('error', (err) => {
          clearTimeout(timer);
          reject(new OutboundError(err.message, 'network'));
        });
      },
    );
    const timer = setTimeout(() => req.destroy(new OutboundError(`no answer within ${options.timeoutMs} ms`, 'timeout')), options.timeoutMs);
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err instanceof OutboundError ? err : new OutboundError(err.message, 'network'));
    });
    // A literal address never passes through lookup: checked here instead.
    const host = u.hostname.replace(/^\[|\]$/g, '');
    const literal = isIP(host) !== 0 && !options.allowLinkLocal ? forbiddenAddress(host) : null;
    if (literal !== null) {
      req.destroy(new OutboundError(literal, 'forbidden'));
      return;
    }
    req.end(body);
  });
}
