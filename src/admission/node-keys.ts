// Each node's admission key (docs/security.md, "Who may publish and play"): derived from the
// service's admission secret, the node's group and id, and the node's token generation, so that
//  - the service signs a token for any node without storing a key per node (every instance of a
//    cluster derives the same one from the shared secret);
//  - a node learns only its own key (in its heartbeat replies) and can admit clients to itself
//    only: a node's key, stolen, opens no other node;
//  - revoking a node's tokens (its generation moves on: destroyed, or an admin's revoke) retires
//    its key and every admission token made with it.
import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import type { NodeKey } from './token.js';

export class NodeKeys {
  private readonly cache = new Map<string, NodeKey>();

  constructor(private readonly secret: Uint8Array) {}

  /** The key of (group, node) at a token generation. */
  of(group: string, nodeId: string, generation: number): NodeKey {
    const name = `${group}\0${nodeId}\0${generation}`;
    let k = this.cache.get(name);
    if (!k) {
      const material = createHmac('sha256', this.secret).update(`switchyard admission key v1\0${name}`).digest();
      // A token names its key by the generation alone (token.ts): keys of another secret simply do not verify.
      k = { kid: String(generation), key: createSecretKey(material) };
      // Bounded: a fleet's nodes, plus churn; clearing only costs a derivation each.
      if (this.cache.size >= 100_000) this.cache.clear();
      this.cache.set(name, k);
    }
    return k;
  }
}

/** A key as the heartbeat reply carries it to its node, and back. */
export interface WireKey {
  kid: string;
  /** The key's bytes, base64url. */
  key: string;
}

export const toWire = (k: NodeKey): WireKey => ({ kid: k.kid, key: k.key.export().toString('base64url') });

export function fromWire(w: WireKey): [string, KeyObject] {
  return [w.kid, createSecretKey(Buffer.from(w.key, 'base64url'))];
}
