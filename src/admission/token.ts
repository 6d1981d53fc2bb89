// Admission tokens on the wire (docs/security.md, "Who may publish and play"): a compact HMAC
// token, signed with the key of the one node it is for (node-keys.ts), checked offline there.
//
// Why not a JWT: RTMP carries the token in the stream name's query, and nginx-rtmp keeps at most
// 255 bytes of a stream name with its query (NGX_RTMP_MAX_NAME): a stream name of up to 128
// characters and a JWT of 300 do not fit, and the token is cut (seen in the admission media test).
// So, as nginx's secure_link and CDNs' URL tokens do, only what the node cannot know is sent: the
// action, the times, the key generation and a unique id; the group, the node and the stream are
// bound by the MAC, which the node recomputes from its own identity and the stream asked for. A
// token for another node, stream or action simply does not verify. 47 characters for a client.
//
// Layout, then base64url:
//   [0]      version (high nibble, 1) and action (low nibble: 0 publish, 1 play, 2 relay)
//   [1..4]   iat, seconds since the epoch (uint32)
//   [5..6]   lifetime, seconds (uint16)
//   [7..10]  the node key's generation (uint32)
//   [11..18] a unique id (8 random bytes)
//   relay only: [19] length n, then the pulling node's id (n bytes of UTF-8)
//   the last 16 bytes: HMAC-SHA256 over "switchyard admission v1", the bytes above, then the
//   group, the node id and (publish, play) the stream, each after a zero byte; truncated to 128 bits.
import { createHmac, randomFillSync, timingSafeEqual, type KeyObject } from 'node:crypto';
import { type GrantAction, type GrantClaims, isGrantClaims } from './grant.js';

/** A node's signing key and its generation (`kid` as the wire key names it). */
export interface NodeKey {
  kid: string;
  key: KeyObject;
}

/** Longer than any token the service makes; anything longer is refused unread. */
export const MAX_TOKEN_LENGTH = 256;
const VERSION = 1;
const ACTIONS: readonly GrantAction[] = ['publish', 'play', 'relay'];
const MAC_BYTES = 16;
const FIXED = 19;
const SEGMENT = /^[A-Za-z0-9_-]+$/;
const DOMAIN = Buffer.from('switchyard admission v1');

/** Random ids drawn from a pool filled 512 at a time: a call to the system's generator per token costs more than the token. */
const idPool = Buffer.alloc(8 * 512);
let idNext = idPool.length;
function randomId(into: Buffer, at: number): void {
  if (idNext >= idPool.length) {
    randomFillSync(idPool);
    idNext = 0;
  }
  idPool.copy(into, at, idNext, idNext + 8);
  idNext += 8;
}

/** The scope a token is bound to without carrying it: who the node is, and what is asked of it. */
export interface TokenScope {
  group: string;
  nodeId: string;
  /** The stream asked for (publish, play); a relay credential is good for any. */
  stream: string;
}

function mac(key: KeyObject, body: Buffer, act: GrantAction, scope: TokenScope): Buffer {
  const h = createHmac('sha256', key).update(DOMAIN).update(body);
  h.update(`\0${scope.group}\0${scope.nodeId}`);
  if (act !== 'relay') h.update(`\0${scope.stream}`);
  return h.digest().subarray(0, MAC_BYTES);
}

/**
 * The token for `claims`, signed with the key of the node they name (`claims.nid`). `jti` is
 * made here when not given as 16 hex digits (the id a deterministic credential keeps).
 */
export function signGrant(claims: Omit<GrantClaims, 'jti'> & { jti?: string }, key: NodeKey): string {
  const act = ACTIONS.indexOf(claims.act);
  if (act < 0) throw new Error(`no such grant action: ${claims.act}`);
  const life = claims.exp - claims.iat;
  if (!Number.isInteger(life) || life < 0 || life > 0xffff) throw new Error('a token lives 0 to 65535 s');
  const generation = Number(key.kid);
  if (!Number.isInteger(generation) || generation < 0 || generation > 0xffffffff) throw new Error(`a node key's id is its generation: ${key.kid}`);
  const sub = claims.act === 'relay' ? Buffer.from(claims.sub ?? '') : Buffer.alloc(0);
  if (sub.length > 64) throw new Error('a relay credential names its node in at most 64 bytes');
  const body = Buffer.alloc(FIXED + (claims.act === 'relay' ? 1 + sub.length : 0));
  body[0] = (VERSION << 4) | act;
  body.writeUInt32BE(claims.iat, 1);
  body.writeUInt16BE(life, 5);
  body.writeUInt32BE(generation, 7);
  if (claims.jti && /^[0-9a-f]{16}$/.test(claims.jti)) Buffer.from(claims.jti, 'hex').copy(body, 11);
  else randomId(body, 11);
  if (claims.act === 'relay') {
    body[FIXED] = sub.length;
    sub.copy(body, FIXED + 1);
  }
  const scope = { group: claims.grp, nodeId: claims.nid, stream: claims.str ?? '' };
  return Buffer.concat([body, mac(key.key, body, claims.act, scope)]).toString('base64url');
}

export type Decoded = { ok: true; claims: GrantClaims } | { ok: false; reason: string };

/**
 * The claims of a token signed for this node (`scope`) with one of its keys (by generation), or
 * why not. A token made for another node, group, stream or action fails the MAC; what the claims
 * allow (times, action) is grant.ts's to judge.
 */
export function verifyGrant(token: string, keys: ReadonlyMap<string, KeyObject>, scope: TokenScope): Decoded {
  const refuse = (reason: string): Decoded => ({ ok: false, reason });
  if (typeof token !== 'string' || token.length === 0) return refuse('no token');
  if (token.length > MAX_TOKEN_LENGTH) return refuse('the token is too long');
  if (!SEGMENT.test(token)) return refuse('not a token (base64url)');
  const bytes = Buffer.from(token, 'base64url');
  if (bytes.length < FIXED + MAC_BYTES) return refuse('not a token (too short)');
  if (bytes[0]! >> 4 !== VERSION) return refuse('not a token of this version');
  const act = ACTIONS[bytes[0]! & 0x0f];
  if (act === undefined) return refuse('not a token (no such action)');
  let end = FIXED;
  let sub: string | undefined;
  if (act === 'relay') {
    const n = bytes[FIXED]!;
    end = FIXED + 1 + n;
    if (bytes.length !== end + MAC_BYTES) return refuse('not a token (its length)');
    sub = bytes.subarray(FIXED + 1, end).toString('utf8');
  } else if (bytes.length !== end + MAC_BYTES) return refuse('not a token (its length)');
  const body = bytes.subarray(0, end);
  const key = keys.get(String(body.readUInt32BE(7)));
  if (!key) return refuse('the token was signed with a key this node does not hold (an older one, or another service)');
  const expected = mac(key, body, act, scope);
  if (!timingSafeEqual(bytes.subarray(end), expected)) return refuse('the token is not for this node, stream and action (or was altered)');
  const iat = body.readUInt32BE(1);
  const claims: GrantClaims = {
    act,
    grp: scope.group,
    nid: scope.nodeId,
    ...(act !== 'relay' ? { str: scope.stream } : {}),
    ...(sub ? { sub } : {}),
    iat,
    exp: iat + body.readUInt16BE(5),
    jti: body.subarray(11, 19).toString('hex'),
  };
  return isGrantClaims(claims) ? { ok: true, claims } : refuse('the token has no valid claims');
}
