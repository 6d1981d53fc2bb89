// Which instances are in the cluster (docs/cluster.md): a key per instance in the `sy_instances`
// bucket, put every second by its instance (with how many groups it owns); the live instances are
// those seen within 3 s, and how long each has been live without a break (a hand-over waits for an
// instance to settle). Ownership (ownership.ts) ranks the groups among them.
import type { KV } from '@nats-io/kv';
import type { Logger } from 'pino';
import type { InstanceInfo } from './ownership.js';
import { GuardedWatch } from './watch.js';

const encode = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

export class Presence {
  private readonly seen = new Map<string, { info: InstanceInfo; at: number; since: number }>();
  private lastPut = 0;
  private watcher: GuardedWatch | null = null;

  constructor(
    private readonly instances: KV,
    private readonly me: InstanceInfo,
    private readonly log: Logger,
    private readonly clock: () => number,
  ) {}

  /** Puts this instance's key, saying how many groups it owns. */
  async put(groups: number): Promise<void> {
    this.lastPut = this.clock();
    await this.instances.put(this.me.id, encode({ ...this.me, groups }));
  }

  /** Whether this instance's key is due again (a second after the last put). */
  due(now: number): boolean {
    return now - this.lastPut >= 1000;
  }

  async watch(): Promise<void> {
    this.watcher = new GuardedWatch(
      this.instances,
      (e) => {
        const now = this.clock();
        const before = this.seen.get(e.key);
        // `since`: live without a break (a presence that lapsed starts again).
        if (e.operation === 'PUT') this.seen.set(e.key, { info: e.json<InstanceInfo>(), at: now, since: before && now - before.at < 3000 ? before.since : now });
        else this.seen.delete(e.key);
      },
      'instances',
      this.log,
    );
    await this.watcher.start();
  }

  /** Restarts of its watch (watch.ts). */
  watchRestarts(): number {
    return this.watcher?.counters.restarts ?? 0;
  }

  /** The live instances (this one included), by id. */
  live(): InstanceInfo[] {
    const now = this.clock();
    const out = [this.me];
    for (const [id, s] of this.seen) if (id !== this.me.id && now - s.at < 3000) out.push(s.info);
    return out;
  }

  /** Since when the instance has been live without a break, if it is seen. */
  since(id: string): number | undefined {
    return this.seen.get(id)?.since;
  }

  /** This instance's key deleted: gone from the list (a clean stop). */
  async leave(): Promise<void> {
    await this.instances.delete(this.me.id);
  }

  stop(): void {
    this.watcher?.stop();
  }
}
