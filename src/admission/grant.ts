// What an admission token grants, and the rule a node applies before it lets a client publish or
// play (docs/security.md, "Who may publish and play"). Pure: the claims, the request and the
// clock in, a yes or a reason out. The node agent runs it for every connection (nginx-rtmp's
// on_publish/on_play, the simulated node's sessions, WHIP and WHEP); the service signs what it
// checks (issuer.ts).

/** What a token lets its holder do on one node. */
export const GRANT_ACTIONS = ['publish', 'play', 'relay'] as const;
export type GrantAction = (typeof GRANT_ACTIONS)[number];

/** What a client (or a node pulling from its parent) asks of a node. */
export type AdmissionAction = 'publish' | 'play';

/**
 * The claims of an admission token. Compact names, because the token rides in a URL.
 * - `act`: publish and play are a client's, for one stream; relay is a node's credential to pull
 *   any stream from the node named (an edge or relay from its parent, a transcoder reading its own input).
 * - `grp`, `nid`: the node group and the node the token is good for: nowhere else.
 * - `str`: the stream (publish and play only).
 * - `sub`: who it was issued to: the token subject of the lookup, or the pulling node's id.
 */
export interface GrantClaims {
  act: GrantAction;
  grp: string;
  nid: string;
  str?: string;
  sub?: string;
  /** Issued at, and expiry: seconds since the epoch, as JWTs count. */
  iat: number;
  exp: number;
  /** Unique per token: what a log line or a revocation names. */
  jti: string;
}

export interface AdmissionRequest {
  action: AdmissionAction;
  group: string;
  nodeId: string;
  stream: string;
  /** The node's clock, ms. */
  now: number;
}

export interface AdmissionPolicy {
  /** Slack for the clocks of the service and the node (ms), on both `iat` and `exp`. */
  leewayMs: number;
  /** The longest life a token may claim (ms): a token that says it lives longer is refused whatever its signature. */
  maxLifeMs: number;
  /**
   * Streams this node must no longer take a publisher for, and since when (ms of the service's
   * clock): their binding moved elsewhere or they were ended. A publish token issued before that
   * is refused; one issued in a later second (the binding came back here) is not.
   */
  droppedSince?: (stream: string) => number | undefined;
}

export type Verdict = { ok: true; claims: GrantClaims } | { ok: false; reason: string };

const NAME_MAX = 128;

/** Whether a decoded payload has the shape of GrantClaims (the signature says who made it, not that it is well formed). */
export function isGrantClaims(v: unknown): v is GrantClaims {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const c = v as Record<string, unknown>;
  const text = (x: unknown, optional = false) => (x === undefined ? optional : typeof x === 'string' && x.length > 0 && x.length <= NAME_MAX);
  const seconds = (x: unknown) => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
  return (
    typeof c.act === 'string' &&
    (GRANT_ACTIONS as readonly string[]).includes(c.act) &&
    text(c.grp) &&
    text(c.nid) &&
    text(c.str, true) &&
    text(c.sub, true) &&
    seconds(c.iat) &&
    seconds(c.exp) &&
    text(c.jti)
  );
}

/** The node's decision on a request made with a token whose signature was already checked. */
export function judge(claims: GrantClaims, req: AdmissionRequest, policy: AdmissionPolicy): Verdict {
  const refuse = (reason: string): Verdict => ({ ok: false, reason });
  const nowS = req.now / 1000;
  const leewayS = policy.leewayMs / 1000;
  if (claims.exp < claims.iat) return refuse('the token expires before it was issued');
  if ((claims.exp - claims.iat) * 1000 > policy.maxLifeMs) return refuse('the token claims a longer life than any token is given');
  if (claims.iat > nowS + leewayS) return refuse('the token is not valid yet (issued in the future)');
  if (claims.exp + leewayS < nowS) return refuse('the token has expired');
  if (claims.grp !== req.group) return refuse(`the token is for node group '${claims.grp}', not this node's`);
  if (claims.nid !== req.nodeId) return refuse(`the token is for node '${claims.nid}', not this one`);
  if (claims.act === 'relay') {
    // A node's credential pulls streams from its parent; it never publishes.
    return req.action === 'play' ? { ok: true, claims } : refuse('a relay credential cannot publish');
  }
  if (claims.act !== req.action) return refuse(`the token is for ${claims.act}, not ${req.action}`);
  if (claims.str !== req.stream) return refuse(`the token is for stream '${claims.str ?? ''}', not '${req.stream}'`);
  if (req.action === 'publish') {
    const since = policy.droppedSince?.(req.stream);
    // Whole seconds, as iat counts: a token issued in the second of the drop is refused too (its
    // holder looks up again), never one issued before it.
    if (since !== undefined && claims.iat <= Math.floor(since / 1000)) return refuse('the stream was moved from this node or ended after the token was issued');
  }
  return { ok: true, claims };
}
