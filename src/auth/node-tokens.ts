// Node token revocation (README, Security). A node token names its node and carries the node's
// token generation (`gen`, 0 when absent); revoking a node's tokens moves its generation on, and a
// token of an older generation is refused from then on, cached or not. Tokens are revoked when
// their node is destroyed (a copied token must not outlive the machine it was handed to) and when
// an admin asks. A generation is kept until every token of the older one has expired
// (auth.nodeTokenTtl), then forgotten: memory stays bounded under node churn.
import type { Database } from 'lmdb';
import { stored } from '../store/failures.js';
import type { Claims } from './tokens.js';

interface Generation {
  gen: number;
  /** When the generation last moved (ms): forgotten once nodeTokenTtl has passed since. */
  at: number;
}

const PREFIX = 'node-token-gen:';
const key = (group: string, nodeId: string) => `${PREFIX}${group}/${nodeId}`;

export class NodeTokens {
  private readonly generations = new Map<string, Generation>();
  private readonly listeners = new Set<(group: string, nodeId: string) => void>();
  /** Cluster mode: where a revocation is shared with the other instances (src/root/cluster.ts). */
  private shared: ((name: string, generation: Generation) => Promise<void>) | null = null;

  constructor(
    private readonly meta: Database<unknown, string>,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {
    for (const { key: k, value } of meta.getRange({ start: PREFIX, end: `${PREFIX}\uffff` })) {
      const g = value as Generation;
      if (this.now() - g.at < ttlMs) this.generations.set((k as string).slice(PREFIX.length), g);
      else void meta.remove(k);
    }
  }

  /** The generation new tokens of this node carry. */
  generation(group: string, nodeId: string): number {
    return this.entry(group, nodeId)?.gen ?? 0;
  }

  /** Whether a node token belongs to a generation that was revoked. */
  revoked(claims: Claims): boolean {
    if (claims.role !== 'node' || claims.nodeGroup === undefined || claims.nodeId === undefined) return false;
    const current = this.entry(claims.nodeGroup, claims.nodeId)?.gen ?? 0;
    return (claims.gen ?? 0) < current;
  }

  /**
   * Every token of the node issued so far stops working at once (a node channel open with one is
   * closed by a listener); durable before it resolves.
   */
  async revoke(group: string, nodeId: string): Promise<number> {
    const next: Generation = { gen: this.generation(group, nodeId) + 1, at: this.now() };
    this.generations.set(`${group}/${nodeId}`, next);
    for (const l of this.listeners) l(group, nodeId);
    await stored(this.meta.put(key(group, nodeId), next));
    await this.shared?.(`${group}/${nodeId}`, next);
    return next.gen;
  }

  /** Cluster mode: revocations are also written with `put`, and come from other instances through `adopt`. */
  share(put: (name: string, generation: Generation) => Promise<void>): void {
    this.shared = put;
  }

  /** A revocation made on another instance (`name`: group/nodeId). */
  adopt(name: string, generation: Generation | null): void {
    if (!generation) return;
    const mine = this.generations.get(name);
    if (mine && mine.gen >= generation.gen) return;
    this.generations.set(name, generation);
    const slash = name.indexOf('/');
    for (const l of this.listeners) l(name.slice(0, slash), name.slice(slash + 1));
  }

  /** Called at each revocation (the node channels close the node's channel). */
  onRevoke(listener: (group: string, nodeId: string) => void): void {
    this.listeners.add(listener);
  }

  private entry(group: string, nodeId: string): Generation | undefined {
    const name = `${group}/${nodeId}`;
    const g = this.generations.get(name);
    if (g && this.now() - g.at >= this.ttlMs) {
      // Every token of the older generations has expired: nothing left to refuse.
      this.generations.delete(name);
      void this.meta.remove(key(group, nodeId));
      return undefined;
    }
    return g;
  }
}
