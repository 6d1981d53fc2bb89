// Who is asking, on SM2's lookup paths. Every SM2 client found sends its lookups without a token;
// with compat.red5sm2.anonymousLookups on they are let through, and what the security work does
// per token subject (lookup rate limits, PENDING caps) is done per client address instead: the
// subject `ip:<address>`, rated by limits.lookups.anonymous. A token that is sent and verifies
// counts as itself, as on our own paths; one that does not verify is set aside when anonymous
// lookups are allowed (SM2 never read it), and refused as on our own paths when they are not.
import { isIP } from 'node:net';
import type { Next } from 'koa';
import { clientAddress } from '../../http/client-address.js';
import type { Ctx } from '../../http/context.js';
import type { Guard } from '../../http/middleware/auth.js';
import { Problem } from '../../http/problem.js';
import type { Services } from '../../http/services.js';

export type { Guard };
/** The guard of one kind of access: passes to `next`, or throws the problem. */
export type Check = (ctx: Ctx, next: Next) => Promise<void>;

export interface Asker {
  /** The rate-limit and PENDING-cap subject: the token's `sub`, or `ip:<address>`. */
  subject: string;
  /** The rate to apply: the token's role, or `anonymous`. */
  rate: string;
}

/**
 * The subject of an address: IPv4 as it is; IPv6 by its /64, the block one subscriber line gets,
 * so that a client cannot take a fresh bucket per address of its own block.
 */
export function addressSubject(address: string): string {
  if (isIP(address) !== 6) return `ip:${address}`;
  const [head = '', tail = ''] = address.toLowerCase().split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const groups = address.includes('::') ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right] : left;
  return `ip:${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/**
 * The asker of a lookup; throws the guard's 401/403 when a token is required and missing or bad.
 * `app` is the guard of `app` access: already passed on a route that requires a token.
 */
export async function askerOf(ctx: Ctx, services: Services, app: Check): Promise<Asker> {
  const passed = ctx.state.user;
  if (passed) return { subject: passed.sub, rate: passed.role };
  const anonymous = services.config.compat.red5sm2.anonymousLookups;
  if (anonymous && ctx.get('authorization') === '') return anonymousAsker(ctx, services);
  try {
    await app(ctx, async () => {});
    const claims = ctx.state.user!;
    return { subject: claims.sub, rate: claims.role };
  } catch (err) {
    if (!anonymous || !(err instanceof Problem) || (err.status !== 401 && err.status !== 403)) throw err;
    ctx.state.user = undefined;
    ctx.log.debug({ code: err.code }, 'an SM2 lookup with a token that does not serve: answered as anonymous');
  }
  return anonymousAsker(ctx, services);
}

/** User name and password of `Authorization: Basic base64(user:password)` (SM2's login), or null. */
export function basicCredentials(header: string): { username: string; password: string } | null {
  const match = /^Basic +([A-Za-z0-9+/]{1,2048}={0,2})\s*$/i.exec(header);
  if (!match) return null;
  const text = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  if (colon < 1 || colon > 256 || text.length - colon - 1 < 1 || text.length - colon - 1 > 1024) return null;
  return { username: text.slice(0, colon), password: text.slice(colon + 1) };
}

function anonymousAsker(ctx: Ctx, services: Services): Asker {
  return { subject: addressSubject(clientAddress(ctx, services.config.server.trustProxy)), rate: 'anonymous' };
}

/**
 * Takes `cost` lookups from the asker's bucket, or throws 429 with the wait. A whole listing
 * costs one per thousand streams it walks: an unpaged answer must not come at a lookup's price.
 */
export function rateLimit(services: Services, asker: Asker, cost = 1): void {
  let wait = 0;
  for (let i = 0; i < cost && wait <= 0; i++) wait = services.lookupRate.take(asker.subject, asker.rate);
  if (wait <= 0) return;
  const what = asker.rate === 'anonymous' ? 'this address has used its lookups per second (limits.lookups.anonymous)' : `this token has used its lookups per second (limits.lookups.${asker.rate})`;
  throw new Problem(429, 'RATE_LIMITED', `${what}; slow down`, { retryAfter: Math.max(1, Math.ceil(wait / 1000)) });
}
