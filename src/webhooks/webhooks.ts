// Webhook endpoints and their deliveries (docs/webhooks.md): those of the config file (kept in
// step with it at every start) and those made through the API (kept in LMDB), each with its
// delivery state (cursor, counts, last success and error) kept where a restart finds it, so that
// nothing is lost and nothing sent twice but what an unacknowledged attempt may resend.
//
// In cluster mode one instance sends (`sending()`, the holder of the webhooks lease), so every
// event goes out once per endpoint, not once per instance; the state is shared through `keep`.
import { createHash } from 'node:crypto';
import type { EventRecord } from '../domain/events.js';
import type { Failure } from '../domain/failure.js';
import { postJson } from '../outbound/http-post.js';
import { outboundUrlProblem } from '../policy/outbound-url.js';
import { type DeliveryState, freshDelivery, withBacklog } from '../policy/webhooks.js';
import { SECRET_PLACEHOLDER } from '../config/secrets.js';
import { MAX_WEBHOOKS, type WebhookInput } from '../config/webhook-schema.js';
import { EndpointDelivery, type EventSource, type Post, type WebhookEndpoint } from './delivery.js';

/** Where endpoints made through the API and every endpoint's delivery state are kept. */
export interface WebhookKeeping {
  endpoints(): WebhookEndpoint[];
  putEndpoint(e: WebhookEndpoint): Promise<void>;
  removeEndpoint(id: string): Promise<void>;
  state(id: string): DeliveryState | undefined;
  putState(id: string, s: DeliveryState): void;
  removeState(id: string): Promise<void>;
  /** Every state handed to putState so far, kept (cluster mode: written to the shared bucket). */
  flush?(): Promise<void>;
}

export interface WebhooksOptions {
  events: EventSource & { subscribe(listener: (e: EventRecord) => void): () => void };
  keeping: WebhookKeeping;
  now?: () => number;
  random?: () => number;
  post?: Post;
  observe?: (id: string, outcome: 'delivered' | 'failed') => void;
  /** Whether this instance sends (cluster mode: the lease holder); always, in the embedded default. */
  sending?: () => boolean;
}

/** The endpoint as the API shows it: everything but the secret. */
export interface WebhookView extends Omit<WebhookEndpoint, 'secret' | 'filter'> {
  secret: typeof SECRET_PLACEHOLDER;
  events: readonly string[];
  groups: readonly string[];
  streams: readonly string[];
  delivery: DeliveryState;
}

const idOf = (url: string) => `hook-${createHash('sha256').update(url).digest('hex').slice(0, 10)}`;

export class Webhooks {
  private readonly deliveries = new Map<string, EndpointDelivery>();
  private unsubscribe: (() => void) | null = null;
  private readonly o: Required<WebhooksOptions>;
  private started = false;

  constructor(options: WebhooksOptions) {
    this.o = { now: Date.now, random: Math.random, post: postJson, observe: () => {}, sending: () => true, ...options };
  }

  /** The config file's endpoints (replacing those it had before) and the API's, then delivery. */
  async start(fromConfig: readonly WebhookInput[]): Promise<void> {
    const configured = fromConfig.map((w) => this.endpointOf(w, 'config'));
    for (const e of this.o.keeping.endpoints()) if (e.source === 'config' && !configured.some((c) => c.id === e.id)) await this.o.keeping.removeEndpoint(e.id);
    for (const e of configured) await this.o.keeping.putEndpoint(e);
    for (const e of this.o.keeping.endpoints()) this.run(e);
    this.started = true;
    this.unsubscribe = this.o.events.subscribe(() => this.kickAll());
    this.kickAll();
  }

  stop(): void {
    this.unsubscribe?.();
    for (const d of this.deliveries.values()) d.stop();
  }

  /** Every endpoint's delivery looks again (a new event, or this instance became the sender). */
  kickAll(): void {
    if (!this.o.sending()) return;
    for (const d of this.deliveries.values()) d.kick();
  }

  // ---- cluster mode (src/cluster/webhook-keeping.ts) ----

  /** This instance became the sender: every endpoint goes on from its kept state. */
  lead(): void {
    for (const d of [...this.deliveries.values()]) this.run(d.endpoint);
    this.kickAll();
  }

  /** This instance is no longer the sender: nothing more is sent from here, the states are kept. */
  async pause(): Promise<void> {
    const all = [...this.deliveries.values()];
    for (const d of all) d.stop();
    await Promise.all(all.map((d) => d.idle()));
    await this.o.keeping.flush?.();
  }

  /** Another instance made, changed (endpoint) or removed (null) an endpoint. */
  adopt(id: string, endpoint: WebhookEndpoint | null): void {
    if (!this.started) return;
    if (endpoint) {
      this.run(endpoint);
      return;
    }
    this.deliveries.get(id)?.stop();
    this.deliveries.delete(id);
  }

  list(): WebhookView[] {
    return [...this.deliveries.values()].map((d) => viewOf(d.endpoint, this.stateOf(d))).sort((a, b) => (a.id < b.id ? -1 : 1));
  }

  get(id: string): WebhookView | undefined {
    const d = this.deliveries.get(id);
    return d ? viewOf(d.endpoint, this.stateOf(d)) : undefined;
  }

  /** The sender's own state; elsewhere (cluster mode) the one it last shared. */
  private stateOf(d: EndpointDelivery): DeliveryState {
    const kept = this.o.sending() ? undefined : this.o.keeping.state(d.endpoint.id);
    return kept ? withBacklog(kept, this.o.events.last) : d.current;
  }

  /** Why `input` cannot be an endpoint (a field path and message), or null. */
  problem(input: WebhookInput): { path: string; message: string } | null {
    const why = outboundUrlProblem(input.url, { allowLinkLocal: input.allowLinkLocal });
    return why ? { path: 'url', message: why } : null;
  }

  async create(input: WebhookInput): Promise<WebhookView | Failure> {
    const endpoint = this.endpointOf(input, 'api');
    if (this.deliveries.has(endpoint.id)) return { ok: false, status: 409, code: 'WEBHOOK_EXISTS', detail: `webhook '${endpoint.id}' exists` };
    if (input.secret === SECRET_PLACEHOLDER) return invalid('secret', 'send a secret: there is no stored one to keep');
    if (this.deliveries.size >= MAX_WEBHOOKS) return { ok: false, status: 409, code: 'WEBHOOK_LIMIT', detail: `at most ${MAX_WEBHOOKS} webhooks` };
    // From now on: a new endpoint gets the events that happen after it was made. Its state first:
    // in cluster mode the sender, seeing the endpoint, starts from it.
    this.o.keeping.putState(endpoint.id, freshDelivery(this.o.events.last));
    await this.o.keeping.putEndpoint(endpoint);
    this.run(endpoint);
    return this.get(endpoint.id)!;
  }

  async replace(id: string, input: WebhookInput): Promise<WebhookView | Failure> {
    const before = this.deliveries.get(id);
    if (!before) return { ok: false, status: 404, code: 'WEBHOOK_NOT_FOUND', detail: `no webhook '${id}'` };
    if (before.endpoint.source === 'config') return { ok: false, status: 409, code: 'WEBHOOK_FROM_CONFIG', detail: `webhook '${id}' comes from the config file: change it there` };
    const secret = input.secret === SECRET_PLACEHOLDER ? before.endpoint.secret : input.secret;
    const endpoint = { ...this.endpointOf({ ...input, secret }, 'api'), id };
    await this.o.keeping.putEndpoint(endpoint);
    before.stop();
    this.run(endpoint);
    return this.get(id)!;
  }

  async remove(id: string): Promise<{ ok: true } | Failure> {
    const d = this.deliveries.get(id);
    if (!d) return { ok: false, status: 404, code: 'WEBHOOK_NOT_FOUND', detail: `no webhook '${id}'` };
    if (d.endpoint.source === 'config') return { ok: false, status: 409, code: 'WEBHOOK_FROM_CONFIG', detail: `webhook '${id}' comes from the config file: remove it there` };
    d.stop();
    this.deliveries.delete(id);
    await this.o.keeping.removeEndpoint(id);
    await this.o.keeping.removeState(id);
    return { ok: true };
  }

  private run(endpoint: WebhookEndpoint): void {
    const state = this.o.keeping.state(endpoint.id) ?? freshDelivery(this.o.events.last);
    const d = new EndpointDelivery(endpoint, state, {
      events: this.o.events,
      post: this.o.post,
      save: (id, s) => this.o.keeping.putState(id, s),
      now: this.o.now,
      random: this.o.random,
      observe: this.o.observe,
    });
    this.deliveries.get(endpoint.id)?.stop();
    this.deliveries.set(endpoint.id, d);
    if (this.o.sending()) d.kick();
  }

  private endpointOf(w: WebhookInput, source: 'config' | 'api'): WebhookEndpoint {
    return {
      id: w.id ?? idOf(w.url),
      url: w.url,
      secret: w.secret,
      filter: { ...(w.events ? { events: w.events } : {}), ...(w.groups ? { groups: w.groups } : {}), ...(w.streams ? { streams: w.streams } : {}) },
      allowLinkLocal: w.allowLinkLocal,
      source,
    };
  }
}

function viewOf(e: WebhookEndpoint, delivery: DeliveryState): WebhookView {
  return {
    id: e.id,
    url: e.url,
    secret: SECRET_PLACEHOLDER,
    events: e.filter.events ?? [],
    groups: e.filter.groups ?? [],
    streams: e.filter.streams ?? [],
    allowLinkLocal: e.allowLinkLocal,
    source: e.source,
    delivery,
  };
}

function invalid(path: string, message: string): Failure {
  return { ok: false, status: 400, code: 'VALIDATION_FAILED', detail: `${path} ${message}`, errors: [{ path: `body.${path}`, message }] };
}
