// The WebRTC proxy's session ids (docs/webrtc.md, "The signalling proxy"): the `Location` it
// answers names which node a session is on and that node's own resource for it, sealed with a
// MAC under the node's admission key (AdmissionIssuer.sessionMac). A later PATCH or DELETE goes
// where the seal says and nowhere else: a client cannot point the proxy at another host, port or
// path, and any instance of a cluster can open an id another made. No state is kept. Pure but for
// the MAC.
import { timingSafeEqual } from 'node:crypto';
import { NAME_PATTERN, STREAM_NAME_PATTERN } from '../../domain/vocabulary.js';

export interface ProxiedSession {
  /** Node group and node. */
  g: string;
  n: string;
  /** Where the proxy reached the node's agent. */
  a: string;
  p: number;
  /** The session's id on the node (its resource is /sessions/{r}). */
  r: string;
  /** WHIP or WHEP, and the stream. */
  k: 'whip' | 'whep';
  s: string;
}

export type Mac = (group: string, nodeId: string, text: string) => Buffer;

/** Longer than any id the proxy makes; anything longer is refused unread. */
export const MAX_SESSION_ID = 1024;
export const SESSION_ID_PATTERN = '^[A-Za-z0-9_-]{16,1000}\\.[A-Za-z0-9_-]{43}$';
const NAME = new RegExp(NAME_PATTERN);
const STREAM = new RegExp(STREAM_NAME_PATTERN);
const HOST = /^[A-Za-z0-9.:_-]{1,253}$/;
const RESOURCE = /^[A-Za-z0-9_-]{1,64}$/;

export function sealSession(session: ProxiedSession, mac: Mac): string {
  const payload = Buffer.from(JSON.stringify(session)).toString('base64url');
  return `${payload}.${mac(session.g, session.n, payload).toString('base64url')}`;
}

function isSession(v: unknown): v is ProxiedSession {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const o = v as Record<string, unknown>;
  return (
    Object.keys(o).length === 7 &&
    typeof o.g === 'string' &&
    NAME.test(o.g) &&
    typeof o.n === 'string' &&
    NAME.test(o.n) &&
    typeof o.a === 'string' &&
    HOST.test(o.a) &&
    typeof o.p === 'number' &&
    Number.isInteger(o.p) &&
    o.p > 0 &&
    o.p < 65536 &&
    typeof o.r === 'string' &&
    RESOURCE.test(o.r) &&
    (o.k === 'whip' || o.k === 'whep') &&
    typeof o.s === 'string' &&
    STREAM.test(o.s)
  );
}

/** The session an id names, when its seal holds; null for anything else. */
export function openSession(id: string, mac: Mac): ProxiedSession | null {
  if (id.length > MAX_SESSION_ID) return null;
  const dot = id.indexOf('.');
  if (dot < 1) return null;
  const payload = id.slice(0, dot);
  let session: unknown;
  try {
    session = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (!isSession(session)) return null;
  const given = Buffer.from(id.slice(dot + 1), 'base64url');
  let expected: Buffer;
  try {
    expected = mac(session.g, session.n, payload);
  } catch {
    return null;
  }
  return given.length === expected.length && timingSafeEqual(given, expected) ? session : null;
}
