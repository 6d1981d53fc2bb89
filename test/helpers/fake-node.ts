// Plays a node agent over the real heartbeat protocol (docs/nodes.md), with a token minted from the
// test service's signing secret.
import type { HeartbeatReply, StreamMedia } from '../../src/schemas/heartbeat.js';
import type { TestService } from './service.js';

/** What a fake node reports in one heartbeat; anything left out takes a plain default. */
export interface FakeHeartbeat {
  ready?: boolean;
  publishers?: number;
  subscribers?: number;
  streams?: Array<{ name: string; publishing?: boolean; subscribers?: number } & StreamMedia>;
  listeners?: { publish?: { protocol: string; port: number }; subscribe?: { protocol: string; port: number } };
}

export class FakeNode {
  readonly token: string;

  constructor(
    private readonly svc: TestService,
    readonly group: string,
    readonly id: string,
  ) {
    this.token = svc.signer.nodeToken(group, id, 3_600_000);
  }

  async beat(b: FakeHeartbeat = {}) {
    const r = await this.svc.send(
      'POST',
      `/as/v1/nodes/${this.id}/events`,
      {
        ready: b.ready ?? true,
        metrics: { 'connections.publisher': b.publishers ?? 0, 'connections.subscriber': b.subscribers ?? 0, 'cpu.load': 0.1 },
        streams: b.streams ?? [],
        ...(b.listeners ? { listeners: b.listeners } : {}),
      },
      this.token,
    );
    if (r.status !== 200) throw new Error(`heartbeat of ${this.id} answered ${r.status}: ${r.text}`);
    return r.json as HeartbeatReply;
  }
}

/** Brings every listed node of a static group into service. */
export async function allInService(svc: TestService, group: string, ids: readonly string[]): Promise<Map<string, FakeNode>> {
  const nodes = new Map(ids.map((id) => [id, new FakeNode(svc, group, id)] as const));
  // Origins first, so that edges find a parent in their first reply.
  const order = [...nodes.values()].sort((a, b) => Number(a.id.startsWith('e')) - Number(b.id.startsWith('e')));
  for (const n of order) await n.beat();
  return nodes;
}
