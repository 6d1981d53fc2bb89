// Prometheus metrics through prom-client. Node and binding counts are read from the actors when
// scraped, so the front end keeps no copy of group state.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { GroupCounts } from '../../actors/group/actor.js';
import type { NodeLoad } from '../model/views.js';
import type { EventRecord } from '../domain/events.js';

/** Each group's per-node load figures, at most `metrics.nodeSeries` nodes each (GroupModel.nodeLoads). */
export type NodeLoadsOf = () => Promise<Array<{ group: string; nodes: NodeLoad[]; omitted: number }>>;

/**
 * Label values the alert rules (config/prometheus/) count increases of: present from the start
 * at 0, since Prometheus's increase() does not see a series' first sample as an increase.
 */
const ALERTED_EVENTS = ['actor.crashed', 'actor.restarted', 'store.unavailable', 'store.recovered', 'scaling.blocked', 'platform.error'] as const;
const LOOKUP_ENDPOINTS = ['stream:publish', 'stream:transcode', 'stream:subscribe', 'live:publish', 'live:subscribe'] as const;

/** prom-client hashes a label object on every observe: keep one child per label set instead. */
export function labelled<L extends string, C>(metric: { labels(...values: string[]): C }, names: readonly L[]) {
  const children = new Map<string, C>();
  return (values: Record<L, string>): C => {
    const key = names.map((n) => values[n]).join('\u0000');
    let child = children.get(key);
    if (!child) children.set(key, (child = metric.labels(...names.map((n) => values[n]))));
    return child;
  };
}

/** One read per scrape: the gauges collected together share the answer of one call to the actors. */
export function perScrape<T>(read: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | null = null;
  return () => (pending ??= read().finally(() => setImmediate(() => (pending = null))));
}

export class Metrics {
  readonly registry = new Registry();
  readonly lookups: Histogram<'endpoint' | 'result'>;
  readonly requests: Counter<'method' | 'route' | 'status'>;
  readonly actorCalls: Histogram<'method'>;
  readonly events: Counter<'type'>;
  readonly lookup: (labels: { endpoint: string; result: string }) => { observe(v: number): void };
  readonly request: (labels: { method: string; route: string; status: string }) => { inc(): void };
  readonly actorCall: (labels: { method: string }) => { observe(v: number): void };
  readonly channelMessage: (labels: { result: string }) => { inc(): void };
  /** Event webhook attempts (docs/webhooks.md), by endpoint and outcome: delivered or failed. */
  readonly webhookDelivery: (labels: { endpoint: string; outcome: string }) => { inc(): void };
  private webhookStates: () => Array<{ id: string; delivery: { backlog: number; consecutiveFailures: number; lastSuccessAt: number | null } }> = () => [];
  /** Admission webhooks asked (docs/security.md): allowed, denied, cached-…, unavailable, failed-open. */
  readonly admissionWebhook: (labels: { outcome: string }) => { inc(): void };
  private openChannels: () => number = () => 0;
  private channelBacklog: () => number = () => 0;
  private eventStreams: () => number = () => 0;
  private eventsWaiting: () => number = () => 0;
  /** Groups whose last store event was store.unavailable (a group's commits failing). */
  private readonly storeFailing = new Set<string>();

  constructor(
    counts: () => Promise<GroupCounts[]>,
    actorStats: () => Promise<Array<{ group: string; heapUsed: number; busySeconds: number; waiting?: number }>> = async () => [],
    nodeLoads: NodeLoadsOf = async () => [],
  ) {
    counts = perScrape(counts);
    actorStats = perScrape(actorStats);
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'switchyard_' });
    this.lookups = new Histogram({
      name: 'switchyard_lookup_duration_seconds',
      help: 'Stream lookups (endpoints 2, 4 and 5) by endpoint and result code',
      labelNames: ['endpoint', 'result'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    });
    this.requests = new Counter({ name: 'switchyard_http_requests_total', help: 'HTTP requests by route and status', labelNames: ['method', 'route', 'status'], registers });
    this.actorCalls = new Histogram({
      name: 'switchyard_actor_call_duration_seconds',
      help: 'Calls from the front end to node-group actors, by method',
      labelNames: ['method'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1],
      registers,
    });
    this.events = new Counter({ name: 'switchyard_events_total', help: 'Events by type', labelNames: ['type'], registers });
    this.lookup = labelled(this.lookups, ['endpoint', 'result'] as const);
    for (const endpoint of LOOKUP_ENDPOINTS) this.lookups.labels(endpoint, 'NO_CAPACITY');
    for (const type of ALERTED_EVENTS) this.events.labels(type).inc(0);
    this.request = labelled(this.requests, ['method', 'route', 'status'] as const);
    this.actorCall = labelled(this.actorCalls, ['method'] as const);
    const channelMessages = new Counter({
      name: 'switchyard_node_channel_messages_total',
      help: 'Node events received over node channels (WebSockets), by result: ok or the problem code',
      labelNames: ['result'],
      registers,
    });
    this.channelMessage = labelled(channelMessages, ['result'] as const);
    const webhookAnswers = new Counter({
      name: 'switchyard_admission_webhook_total',
      help: "Lookups that asked a group's admission webhook, by outcome: allowed, denied, cached-allowed, cached-denied, unavailable (refused), failed-open",
      labelNames: ['outcome'],
      registers,
    });
    this.admissionWebhook = labelled(webhookAnswers, ['outcome'] as const);
    const deliveries = new Counter({
      name: 'switchyard_webhook_deliveries_total',
      help: 'Event webhook attempts, by endpoint and outcome (delivered, failed)',
      labelNames: ['endpoint', 'outcome'],
      registers,
    });
    this.webhookDelivery = labelled(deliveries, ['endpoint', 'outcome'] as const);
    const hooks = () => this.webhookStates();
    for (const [name, help, read] of [
      ['switchyard_webhook_backlog', 'Events an endpoint has still to be passed (sent, or skipped as unwanted)', (d: { backlog: number }) => d.backlog],
      ['switchyard_webhook_consecutive_failures', 'Failed attempts since the last success: the same event each time', (d: { consecutiveFailures: number }) => d.consecutiveFailures],
      ['switchyard_webhook_last_success_seconds', 'When an endpoint last took an event (seconds since the epoch; 0: never)', (d: { lastSuccessAt: number | null }) => (d.lastSuccessAt ?? 0) / 1000],
    ] as const) {
      new Gauge({
        name,
        help,
        labelNames: ['endpoint'],
        registers,
        collect() {
          this.reset();
          for (const h of hooks()) this.labels(h.id).set(read(h.delivery as never));
        },
      });
    }
    const channels = () => this.openChannels();
    new Gauge({
      name: 'switchyard_node_channels',
      help: 'Node channels (WebSockets) open',
      registers,
      collect() {
        this.set(channels());
      },
    });
    const backlog = () => this.channelBacklog();
    const streams = () => this.eventStreams();
    new Gauge({
      name: 'switchyard_event_streams',
      help: 'Server-Sent Event streams open (GET /as/v1/events)',
      registers,
      collect() {
        this.set(streams());
      },
    });
    const eventsWaiting = () => this.eventsWaiting();
    new Gauge({
      name: 'switchyard_events_waiting_for_store',
      help: 'Events appended and not yet sent: each goes out once its log write is durable',
      registers,
      collect() {
        this.set(eventsWaiting());
      },
    });
    new Gauge({
      name: 'switchyard_node_channel_backlog_max',
      help: 'The most events one node channel has had read and not yet answered since the start (reading stops at 16)',
      registers,
      collect() {
        this.set(backlog());
      },
    });
    new Gauge({
      name: 'switchyard_nodes',
      help: 'Nodes by node group, role, region and state',
      labelNames: ['group', 'role', 'region', 'state'],
      registers,
      async collect() {
        this.reset();
        for (const g of await counts()) for (const n of g.nodes) this.set({ group: g.name, role: n.role, region: n.region, state: n.state }, n.count);
      },
    });
    new Gauge({
      name: 'switchyard_actor_heap_bytes',
      help: 'Heap in use by each node-group actor thread',
      labelNames: ['group'],
      registers,
      async collect() {
        this.reset();
        for (const h of await actorStats()) this.set({ group: h.group }, h.heapUsed);
      },
    });
    new Counter({
      name: 'switchyard_actor_busy_seconds_total',
      help: 'Time each node-group actor spent deciding lookups and heartbeats (near 1 per second: saturated)',
      labelNames: ['group'],
      registers,
      async collect() {
        this.reset();
        for (const h of await actorStats()) this.inc({ group: h.group }, h.busySeconds);
      },
    });
    // Whole-group figures, unbounded by metrics.nodeSeries: what capacity alerts divide.
    new Gauge({
      name: 'switchyard_group_connections',
      help: 'The summed load of the INSERVICE nodes of a group, by role',
      labelNames: ['group', 'role'],
      registers,
      async collect() {
        this.reset();
        for (const g of await counts()) for (const l of g.load) this.set({ group: g.name, role: l.role }, l.connections);
      },
    });
    new Gauge({
      name: 'switchyard_group_capacity',
      help: 'The summed limits of the INSERVICE nodes of a group, by role (nodes without a limit add 0)',
      labelNames: ['group', 'role'],
      registers,
      async collect() {
        this.reset();
        for (const g of await counts()) for (const l of g.load) this.set({ group: g.name, role: l.role }, l.capacity);
      },
    });
    const failing = this.storeFailing;
    new Gauge({
      name: 'switchyard_store_unavailable',
      help: "1 while a node group's writes are refused (disk full or read-only: 503 STORE_UNAVAILABLE), 0 once a commit succeeds again",
      labelNames: ['group'],
      registers,
      async collect() {
        this.reset();
        for (const g of await counts()) this.set({ group: g.name }, failing.has(g.name) ? 1 : 0);
      },
    });
    this.perNode(nodeLoads, registers);
    new Gauge({
      name: 'switchyard_answers_waiting_for_store',
      help: 'Answers of each node-group actor decided and held until what they write or reveal is durable',
      labelNames: ['group'],
      registers,
      async collect() {
        this.reset();
        for (const h of await actorStats()) this.set({ group: h.group }, h.waiting ?? 0);
      },
    });
    new Gauge({
      name: 'switchyard_bindings',
      help: 'Stream bindings by node group and state',
      labelNames: ['group', 'state'],
      registers,
      async collect() {
        this.reset();
        for (const g of await counts()) for (const [state, n] of Object.entries(g.bindings)) this.set({ group: g.name, state }, n);
      },
    });
  }

  /** Every event the service emits: counted by type, and what the gauges follow (store availability). */
  observeEvent(e: EventRecord): void {
    this.events.inc({ type: e.type });
    if (e.type === 'store.unavailable') this.storeFailing.add(e.group);
    else if (e.type === 'store.recovered') this.storeFailing.delete(e.group);
    else if (e.type === 'nodegroup.changed' && e.change === 'deleted') this.storeFailing.delete(e.group);
  }

  /**
   * One series per node (load, limit, connections, state, last heartbeat) for the dashboard's
   * per-node panels. Bounded: at most `metrics.nodeSeries` nodes per group, the busiest first
   * (switchyard_node_series_omitted says how many were left out), and a node's series go with it
   * (every scrape is built afresh), so a churning fleet does not pile up series.
   */
  private perNode(nodeLoads: NodeLoadsOf, registers: Registry[]): void {
    const labelNames = ['group', 'region', 'role', 'node'] as const;
    const read = perScrape(nodeLoads);
    const each = (fill: (gauge: Gauge<string>, labels: Record<(typeof labelNames)[number], string>, n: NodeLoad) => void) =>
      async function collect(this: Gauge<string>) {
        this.reset();
        for (const g of await read()) for (const n of g.nodes) fill(this, { group: g.group, region: n.region, role: n.role, node: n.id }, n);
      };
    new Gauge({
      name: 'switchyard_node_load',
      help: "A node's load as selection ranks it (its rule's rank: connections by default, plus assignments since its last heartbeat)",
      labelNames,
      registers,
      collect: each((g, l, n) => g.set(l, n.load)),
    });
    new Gauge({
      name: 'switchyard_node_limit',
      help: "A node's limit: at or above it, it has no room (absent for nodes without a rule)",
      labelNames,
      registers,
      collect: each((g, l, n) => {
        if (n.limit !== null) g.set(l, n.limit);
      }),
    });
    new Gauge({
      name: 'switchyard_node_connections',
      help: 'Connections a node reported in its last heartbeat, by kind (publisher, subscriber)',
      labelNames: [...labelNames, 'kind'],
      registers,
      collect: each((g, l, n) => {
        g.set({ ...l, kind: 'publisher' }, n.publishers);
        g.set({ ...l, kind: 'subscriber' }, n.subscribers);
      }),
    });
    new Gauge({
      name: 'switchyard_node_state',
      help: "1 for a node's current state (one series per node)",
      labelNames: [...labelNames, 'state'],
      registers,
      collect: each((g, l, n) => g.set({ ...l, state: n.state }, 1)),
    });
    new Gauge({
      name: 'switchyard_node_last_heartbeat_timestamp_seconds',
      help: "When a node's last heartbeat arrived (Unix time); absent until its first since the start",
      labelNames,
      registers,
      collect: each((g, l, n) => {
        if (n.lastHeartbeat !== null) g.set(l, n.lastHeartbeat / 1000);
      }),
    });
    new Gauge({
      name: 'switchyard_node_series_omitted',
      help: 'Nodes of a group left out of the per-node series (past metrics.nodeSeries, the least busy)',
      labelNames: ['group'],
      registers,
      async collect() {
        this.reset();
        for (const g of await read()) this.set({ group: g.group }, g.omitted);
      },
    });
  }

  /** Where the open node channels are counted (the node routes own them). */
  trackEventStreams(count: () => number): void {
    this.eventStreams = count;
  }

  /** Where the events waiting for the store are counted (the event log). */
  trackEventLog(waiting: () => number): void {
    this.eventsWaiting = waiting;
  }

  /** Where the webhook gauges read each endpoint's delivery state. */
  trackWebhooks(states: () => Array<{ id: string; delivery: { backlog: number; consecutiveFailures: number; lastSuccessAt: number | null } }>): void {
    this.webhookStates = states;
  }

  trackChannels(count: () => number, backlog: () => number): void {
    this.openChannels = count;
    this.channelBacklog = backlog;
  }
}
