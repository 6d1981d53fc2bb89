// One webhook endpoint's delivery (docs/webhooks.md): reads the event log from its cursor, sends
// each event it wants, one at a time and in order, signed the Standard Webhooks way, and moves the
// cursor on a 2xx only; a failure waits (src/policy/webhooks.ts) and sends the same event again.
// Nothing here runs on a lookup's path: a slow or dead receiver holds up only its own endpoint.
import { Webhook } from 'standardwebhooks';
import type { EventRecord } from '../domain/events.js';
import { OutboundError, type PostAnswer } from '../outbound/http-post.js';
import { type DeliveryState, delivered, failed, payloadOf, skipped, type WebhookFilter, wants, withBacklog } from '../policy/webhooks.js';

export interface WebhookEndpoint {
  id: string;
  url: string;
  secret: string;
  filter: WebhookFilter;
  allowLinkLocal: boolean;
  /** Where it was defined: the config file (kept in step with it) or the API. */
  source: 'config' | 'api';
}

/** The event log as delivery reads it. */
export interface EventSource {
  /** The last event id sent. */
  readonly last: number;
  /** The first id the log still holds (0 when empty). */
  oldest(): number;
  since(seq: number, limit: number): EventRecord[];
}

export type Post = (url: string, body: string, headers: Record<string, string>, options: { timeoutMs: number; allowLinkLocal?: boolean }) => Promise<PostAnswer>;

export interface DeliveryOptions {
  events: EventSource;
  post: Post;
  /** Keeps the state (the cursor above all) where a restart finds it. */
  save(id: string, state: DeliveryState): void;
  now(): number;
  random(): number;
  /** Each attempt's outcome: delivered, failed (HTTP status or network), for metrics. */
  observe(id: string, outcome: 'delivered' | 'failed'): void;
  timeoutMs?: number;
  /** Arms the wait before a retry; answers how to cancel it (tests fire it themselves). */
  retryAfter?: (ms: number, fire: () => void) => () => void;
}

const realWait = (ms: number, fire: () => void) => {
  const timer = setTimeout(fire, ms);
  return () => clearTimeout(timer);
};

const BATCH = 200;

export class EndpointDelivery {
  /** The sending under way, if any. */
  private running: Promise<void> | null = null;
  private stopped = false;
  /** Cancels the wait before a retry, while one is armed. */
  private timer: (() => void) | null = null;
  private readonly signer: Webhook;

  constructor(
    readonly endpoint: WebhookEndpoint,
    private state: DeliveryState,
    private readonly o: DeliveryOptions,
  ) {
    this.signer = new Webhook(endpoint.secret);
  }

  get current(): DeliveryState {
    return withBacklog(this.state, this.o.events.last);
  }

  /** New events, or a retry's time: sends what is due, unless already sending or waiting out a failure. */
  kick(): void {
    if (this.running || this.stopped || this.timer) return;
    this.running = this.run().finally(() => {
      this.running = null;
    });
  }

  /** Once the sending under way (a request may be out) is over: after stop(), nothing more is sent. */
  async idle(): Promise<void> {
    await this.running;
  }

  stop(): void {
    this.stopped = true;
    this.timer?.();
    this.timer = null;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const oldest = this.o.events.oldest();
      // Events the log dropped before they were sent: counted, and passed.
      if (oldest > this.state.cursor + 1) this.set(skipped(this.state, oldest - 1, oldest - 1 - this.state.cursor));
      const batch = this.o.events.since(this.state.cursor, BATCH);
      if (batch.length === 0) return;
      for (const e of batch) {
        if (this.stopped) return;
        if (!wants(this.endpoint.filter, e)) {
          this.state = skipped(this.state, e.seq);
          continue;
        }
        const error = await this.send(e);
        if (error === null) {
          this.set(delivered(this.state, e.seq, this.o.now()));
          this.o.observe(this.endpoint.id, 'delivered');
          continue;
        }
        this.set(failed(this.state, error, this.o.now(), this.o.random));
        this.o.observe(this.endpoint.id, 'failed');
        this.timer = (this.o.retryAfter ?? realWait)(Math.max(0, this.state.nextAttemptAt! - this.o.now()), () => {
          this.timer = null;
          this.kick();
        });
        return;
      }
      // Skips are kept with the batch, not each: a restart re-reads at most one batch.
      this.set(this.state);
    }
  }

  /** null on a 2xx; else why not. */
  private async send(e: EventRecord): Promise<string | null> {
    const body = payloadOf(e);
    const id = String(e.seq);
    const at = new Date(this.o.now());
    const headers = { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': this.signer.sign(id, at, body) };
    try {
      const res = await this.o.post(this.endpoint.url, body, headers, { timeoutMs: this.o.timeoutMs ?? 10_000, allowLinkLocal: this.endpoint.allowLinkLocal });
      return res.status >= 200 && res.status < 300 ? null : `HTTP ${res.status}`;
    } catch (err) {
      return err instanceof OutboundError ? err.message : `${(err as Error).name}: ${(err as Error).message}`;
    }
  }

  private set(state: DeliveryState): void {
    this.state = state;
    this.o.save(this.endpoint.id, state);
  }
}
