// Webhooks in cluster mode (docs/webhooks.md, docs/cluster.md). One instance sends: the holder of
// the webhooks lease, a key of the lease bucket taken, renewed, ridden through elections and
// handed over like a node group's (ownership.ts), so that each event goes out once per endpoint,
// not once per instance. Endpoints made through the API and every endpoint's delivery state (its
// cursor above all) are kept in `sy_meta` and followed by every instance through the shared
// state's watch: any instance's API and metrics show them, and the next sender goes on from the
// last cursor the previous one wrote. Only the sender writes a state, from taking the lease to the
// end of handing it back (WebhookSender); a kill -9 between a delivery and its state's write sends
// that event again: at least once, in order.
import type { Logger } from 'pino';
import type { DeliveryState } from '../policy/webhooks.js';
import { StoreUnavailable } from '../store/failures.js';
import type { WebhookEndpoint } from '../webhooks/delivery.js';
import type { WebhookKeeping, Webhooks } from '../webhooks/webhooks.js';
import { keyOf, nameOf, type SharedState } from './shared-state.js';

/** The sender's key in the lease bucket: no node group can be named so (a '/', NAME_PATTERN). */
export const WEBHOOK_LEASE = 'sy/webhooks';

export class ClusterWebhookKeeping implements WebhookKeeping {
  private readonly kept = new Map<string, WebhookEndpoint>();
  private readonly states = new Map<string, DeliveryState>();
  /** States to write, the latest of each endpoint (a write under way takes the next one after it). */
  private readonly pending = new Map<string, DeliveryState>();
  private writing: Promise<void> | null = null;
  /** Told of an endpoint another instance made, changed or removed. */
  onEndpoint: (id: string, e: WebhookEndpoint | null) => void = () => {};

  constructor(
    private readonly shared: SharedState,
    /** Whether this instance holds the webhooks lease now. */
    private readonly sends: () => boolean,
    private readonly log: Logger,
  ) {}

  /** Everything the bucket holds now: before delivery starts, and when this instance becomes the sender. */
  async load(): Promise<void> {
    for (const key of await this.shared.keys('hook.')) {
      const e = await this.shared.get<WebhookEndpoint>(key);
      if (e) this.kept.set(nameOf(key), e);
    }
    for (const key of await this.shared.keys('hookstate.')) {
      const s = await this.shared.get<DeliveryState>(key);
      if (s) this.states.set(nameOf(key), s);
    }
  }

  /** The shared state's watch saw an endpoint's key change. */
  sawEndpoint(id: string, value: unknown): void {
    const before = this.kept.get(id);
    if (value === null) this.kept.delete(id);
    else this.kept.set(id, value as WebhookEndpoint);
    if (JSON.stringify(before ?? null) !== JSON.stringify(value)) this.onEndpoint(id, value as WebhookEndpoint | null);
  }

  /** The watch saw a delivery state: the sender's own are newer here than their echoes (but a new endpoint's first is taken). */
  sawState(id: string, value: unknown): void {
    if (value !== null && this.sends() && this.states.has(id)) return;
    if (value === null) this.states.delete(id);
    else this.states.set(id, value as DeliveryState);
  }

  endpoints(): WebhookEndpoint[] {
    return [...this.kept.values()];
  }

  async putEndpoint(e: WebhookEndpoint): Promise<void> {
    if (JSON.stringify(this.kept.get(e.id) ?? null) === JSON.stringify(e)) return;
    // A new endpoint's first state lands before it (webhooks.ts create): the watch brings them in that order.
    await this.flush();
    await this.shared.overwrite(keyOf('hook', e.id), e).catch((err: unknown) => {
      throw new StoreUnavailable(err);
    });
    this.kept.set(e.id, e);
  }

  async removeEndpoint(id: string): Promise<void> {
    await this.shared.remove(keyOf('hook', id)).catch((err: unknown) => {
      throw new StoreUnavailable(err);
    });
    this.kept.delete(id);
  }

  state(id: string): DeliveryState | undefined {
    return this.states.get(id);
  }

  /** Not awaited, as in LMDB: the sender's states, and the first state of an endpoint made here. */
  putState(id: string, s: DeliveryState): void {
    if (!this.sends() && this.states.has(id)) return;
    this.states.set(id, s);
    this.pending.set(id, s);
    this.writing ??= this.write();
  }

  async removeState(id: string): Promise<void> {
    this.states.delete(id);
    this.pending.delete(id);
    await this.shared.remove(keyOf('hookstate', id)).catch((err: unknown) => {
      throw new StoreUnavailable(err);
    });
  }

  /** Every state handed to putState so far, written (or given up). */
  async flush(): Promise<void> {
    await this.writing;
  }

  private async write(): Promise<void> {
    while (this.pending.size > 0) {
      const batch = [...this.pending];
      this.pending.clear();
      await Promise.all(
        batch.map(([id, s]) =>
          this.shared.overwrite(keyOf('hookstate', id), s).catch((err: Error) => {
            // The next state written carries it; lost for good, its events are sent again.
            this.log.warn({ err, webhook: id }, 'could not share a webhook delivery state');
          }),
        ),
      );
    }
    this.writing = null;
  }
}

/**
 * This instance's part as the cluster's sender, driven by the webhooks lease (runtime.ts: the
 * lease's acquire and release). `leading` (states may be written) spans from a fresh read of the
 * cursors to the end of a pause: the request under way when the lease is handed back still writes
 * its cursor, else the next sender would send that event again.
 */
export class WebhookSender {
  leading = false;

  constructor(
    private readonly keeping: { load(): Promise<void> },
    private readonly webhooks: Webhooks,
  ) {}

  async lead(): Promise<void> {
    this.leading = false;
    // From the cursors the previous sender last wrote, read afresh.
    await this.keeping.load();
    this.leading = true;
    this.webhooks.lead();
  }

  async unlead(): Promise<void> {
    await this.webhooks.pause();
    this.leading = false;
  }
}
