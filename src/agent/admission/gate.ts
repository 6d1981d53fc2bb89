// The node's side of admission (docs/security.md, "Who may publish and play"): every publish and
// play on this node passes here, whichever media server or protocol carries it (nginx-rtmp's
// callbacks, the simulated node's sessions, WHIP and WHEP). The node's key and whether tokens are
// required come in every heartbeat reply; until the first reply the node admits no one. Tokens are
// checked offline: signature (token.ts), then the grant's rule (grant.ts).
import { createHash, type KeyObject } from 'node:crypto';
import { type AdmissionAction, judge, type Verdict } from '../../admission/grant.js';
import { MAX_GRANT_LIFE_MS, NODE_CREDENTIAL_PERIOD_MS } from '../../admission/issuer.js';
import { fromWire, type WireKey } from '../../admission/node-keys.js';
import { signGrant, verifyGrant } from '../../admission/token.js';
import { STREAM_NAME_RE } from '../../domain/vocabulary.js';

export interface AdmissionOrders {
  required: boolean;
  keys: WireKey[];
  leewayMs: number;
}

export interface DropOrder {
  at: number;
  streams: string[];
}

export class AdmissionGate {
  private keys = new Map<string, KeyObject>();
  private newest: { kid: string; key: KeyObject } | null = null;
  private required = true;
  private told = false;
  private leewayMs = 30_000;
  /** Streams moved off this node or ended, and when (the service's clock, ms): their older publish tokens are refused. */
  private readonly dropped = new Map<string, number>();

  constructor(
    readonly group: string,
    readonly nodeId: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes a heartbeat reply's admission orders and drops; answers the streams whose publishers must be disconnected now. */
  update(orders: AdmissionOrders | undefined, drop: DropOrder | undefined): string[] {
    if (orders) {
      this.told = true;
      this.required = orders.required;
      this.leewayMs = orders.leewayMs;
      const keys = orders.keys.map(fromWire);
      if (keys.length > 0) {
        this.keys = new Map(keys);
        this.newest = { kid: keys[0]![0], key: keys[0]![1] };
      }
    }
    const horizon = this.now() - MAX_GRANT_LIFE_MS;
    for (const [stream, at] of this.dropped) if (at < horizon) this.dropped.delete(stream);
    if (!drop) return [];
    const streams = drop.streams.filter((s) => STREAM_NAME_RE.test(s));
    for (const s of streams) this.dropped.set(s, Math.max(drop.at, this.dropped.get(s) ?? 0));
    return streams;
  }

  /** Whether this node asks for tokens at all (false: the group admits anyone). */
  get requiresTokens(): boolean {
    return this.required;
  }

  /** The decision on one publish or play: `token` is what the client (or a pulling node) presented, if anything. */
  check(action: AdmissionAction, stream: string, token: string | undefined | null): Verdict | { ok: true; claims: null } {
    if (!STREAM_NAME_RE.test(stream)) return { ok: false, reason: 'not a stream name' };
    if (!this.told) return { ok: false, reason: 'this node has not heard from the control plane yet' };
    if (!this.required) return { ok: true, claims: null };
    if (!token) return { ok: false, reason: 'no token: look the stream up first, and use the answer’s url' };
    const decoded = verifyGrant(token, this.keys, { group: this.group, nodeId: this.nodeId, stream });
    if (!decoded.ok) return decoded;
    return judge(
      decoded.claims,
      { action, group: this.group, nodeId: this.nodeId, stream, now: this.now() },
      {
        leewayMs: this.leewayMs,
        maxLifeMs: MAX_GRANT_LIFE_MS,
        droppedSince: (s) => this.dropped.get(s),
      },
    );
  }

  /**
   * A credential for this node's own reading of its streams (a transcoder's ladder reads its input
   * back from the local media server), signed with its own key; null before the first reply. The
   * same for a whole period, as the service's node credentials are (issuer.ts), so the job that
   * carries it does not change at every heartbeat.
   */
  selfCredential(): string | null {
    if (!this.newest) return null;
    const start = Math.floor(this.now() / NODE_CREDENTIAL_PERIOD_MS) * NODE_CREDENTIAL_PERIOD_MS;
    const iat = start / 1000;
    return signGrant(
      {
        act: 'relay',
        grp: this.group,
        nid: this.nodeId,
        sub: this.nodeId,
        iat,
        exp: iat + (2 * NODE_CREDENTIAL_PERIOD_MS) / 1000,
        jti: createHash('sha256').update(`self ${this.newest.kid} ${iat}`).digest('hex').slice(0, 16),
      },
      { kid: this.newest.kid, key: this.newest.key },
    );
  }
}
