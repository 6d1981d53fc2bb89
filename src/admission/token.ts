// Admission tokens on the wire: compact JWS (RFC 7515) with HS256, a JWT any tool can decode.
// Signed with the key of the one node the token is for (node-keys.ts), so a node verifies
// offline and a node's key admits clients to that node only. Written by hand rather than with
// jsonwebtoken because the service signs one per lookup: HMAC over a ready key costs a few
// microseconds, jsonwebtoken's option handling many times that (bench/admission.ts), and the
// node agent parses hostile input here, where every step must be bounded and explicit.
import { createHmac, timingSafeEqual, type KeyObject } from 'node:crypto';
import { type GrantClaims, isGrantClaims } from './grant.js';

/** A node's signing key and its id (`kid` in the token's header). */
export interface NodeKey {
  kid: string;
  key: KeyObject;
}

/** Longer than any token the service makes; anything longer is refused unread. */
export const MAX_TOKEN_LENGTH = 2048;
const SEGMENT = /^[A-Za-z0-9_-]+$/;

const HEADER_CACHE = new Map<string, string>();
function headerOf(kid: string): string {
  let h = HEADER_CACHE.get(kid);
  if (h === undefined) {
    h = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT', kid })).toString('base64url');
    if (HEADER_CACHE.size > 1024) HEADER_CACHE.clear();
    HEADER_CACHE.set(kid, h);
  }
  return h;
}

function mac(key: KeyObject, input: string): Buffer {
  return createHmac('sha256', key).update(input).digest();
}

export function signGrant(claims: GrantClaims, key: NodeKey): string {
  const input = `${headerOf(key.kid)}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  return `${input}.${mac(key.key, input).toString('base64url')}`;
}

export type Decoded = { ok: true; claims: GrantClaims } | { ok: false; reason: string };

function json(segment: string): unknown {
  try {
    return JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

/**
 * The claims of a token signed with one of `keys` (by `kid`), or why not. Checks the form, the
 * header (HS256 only: no `none`, no algorithm the sender chooses) and the signature; what the
 * claims allow is grant.ts's to judge.
 */
export function verifyGrant(token: string, keys: ReadonlyMap<string, KeyObject>): Decoded {
  const refuse = (reason: string): Decoded => ({ ok: false, reason });
  if (typeof token !== 'string' || token.length === 0) return refuse('no token');
  if (token.length > MAX_TOKEN_LENGTH) return refuse('the token is too long');
  const parts = token.split('.');
  if (parts.length !== 3 || !parts.every((p) => SEGMENT.test(p))) return refuse('not a token (three base64url parts)');
  const [h, p, s] = parts as [string, string, string];
  const header = json(h) as { alg?: unknown; kid?: unknown } | undefined;
  if (typeof header !== 'object' || header === null || header.alg !== 'HS256') return refuse('the token is not HS256');
  if (typeof header.kid !== 'string') return refuse('the token names no key');
  const key = keys.get(header.kid);
  if (!key) return refuse('the token was signed with a key this node does not hold (another node, or an older key)');
  const given = Buffer.from(s, 'base64url');
  const expected = mac(key, `${h}.${p}`);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return refuse('the signature does not match');
  const claims = json(p);
  if (!isGrantClaims(claims)) return refuse('the token has no valid claims');
  return { ok: true, claims };
}
