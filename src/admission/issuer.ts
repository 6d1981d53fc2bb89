// The service's side of admission (docs/security.md, "Who may publish and play"): the token a
// lookup answer carries, the URL a client uses, each node's key for its heartbeat reply, and the
// credentials nodes present to one another (an edge pulling from its parent, a transcoder
// pushing renditions to its origin).
import { createHash, createHmac } from 'node:crypto';
import type { AdmissionAction, GrantClaims } from './grant.js';
import { type NodeKeys, toWire, type WireKey } from './node-keys.js';
import { signGrant } from './token.js';

/**
 * Node credentials are made afresh every period and live two: the same credential for a whole
 * period, so that an edge's nginx config (which carries it) or a transcoder's job changes twice a
 * day, not at every heartbeat, and any instance of a cluster makes the same one.
 */
export const NODE_CREDENTIAL_PERIOD_MS = 6 * 3600_000;
/** What a node accepts as a token's life at most: node credentials' two periods, and then some. */
export const MAX_GRANT_LIFE_MS = 2 * NODE_CREDENTIAL_PERIOD_MS + 3600_000;

export interface IssuedToken {
  token: string;
  /** When it expires, ms. */
  expiresAt: number;
}

export class AdmissionIssuer {
  constructor(
    private readonly keys: NodeKeys,
    /** A node's token generation (NodeTokens.generation): its key moves on with it. */
    private readonly generation: (group: string, nodeId: string) => number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The node's current key, as its heartbeat reply carries it. */
  keyOf(group: string, nodeId: string): WireKey {
    return toWire(this.keys.of(group, nodeId, this.generation(group, nodeId)));
  }

  /** A client's token: publish or play `stream` on one node, for `ttlMs`. Who asked is the lookup's to log, not the token's to carry (token.ts). */
  client(group: string, nodeId: string, action: AdmissionAction, stream: string, ttlMs: number): IssuedToken {
    const iat = Math.floor(this.now() / 1000);
    const exp = iat + Math.max(1, Math.ceil(ttlMs / 1000));
    const token = signGrant({ act: action, grp: group, nid: nodeId, str: stream, iat, exp }, this.keys.of(group, nodeId, this.generation(group, nodeId)));
    return { token, expiresAt: exp * 1000 };
  }

  /** What `child` presents to pull streams from `parent` (an edge or relay from its parent, a transcoder from itself). */
  relay(group: string, parent: string, child: string): string {
    return this.nodeCredential({ act: 'relay', grp: group, nid: parent, sub: child });
  }

  /** What a transcoder presents to publish one rendition to its stream's origin. */
  push(group: string, origin: string, transcoder: string, rendition: string): string {
    return this.nodeCredential({ act: 'publish', grp: group, nid: origin, str: rendition, sub: transcoder });
  }

  /**
   * A MAC of `text` under the node's key, apart from every token (its own prefix): what the WebRTC
   * proxy seals the ids of the sessions it made on that node with (src/http/proxy/sessions.ts), so
   * that any instance can tell its own from a forgery, and a node whose key moved on has none left.
   */
  sessionMac(group: string, nodeId: string, text: string): Buffer {
    const { key } = this.keys.of(group, nodeId, this.generation(group, nodeId));
    return createHmac('sha256', key).update(`switchyard proxy session v1\0${text}`).digest();
  }

  private nodeCredential(grant: Omit<GrantClaims, 'iat' | 'exp' | 'jti'>): string {
    const start = Math.floor(this.now() / NODE_CREDENTIAL_PERIOD_MS) * NODE_CREDENTIAL_PERIOD_MS;
    const iat = start / 1000;
    const exp = (start + 2 * NODE_CREDENTIAL_PERIOD_MS) / 1000;
    // The same inputs make the same credential (stable across heartbeats and instances); the id is
    // still unique to it.
    const jti = createHash('sha256')
      .update(JSON.stringify([grant.act, grant.grp, grant.nid, grant.str ?? '', grant.sub ?? '', iat]))
      .digest('hex')
      .slice(0, 16);
    return signGrant({ ...grant, iat, exp, jti }, this.keys.of(grant.grp, grant.nid, this.generation(grant.grp, grant.nid)));
  }
}
