// Prometheus metrics through prom-client. Node and binding counts are read from the actors when
// scraped, so the front end keeps no copy of group state.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { GroupCounts } from '../../actors/group/actor.js';

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
  private openChannels: () => number = () => 0;
  private channelBacklog: () => number = () => 0;
  private eventStreams: () => number = () => 0;
  private eventsWaiting: () => number = () => 0;

  constructor(counts: () => Promise<GroupCounts[]>, actorStats: () => Promise<Array<{ group: string; heapUsed: number; busySeconds: number; waiting?: number }>> = async () => []) {
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
    this.request = labelled(this.requests, ['method', 'route', 'status'] as const);
    this.actorCall = labelled(this.actorCalls, ['method'] as const);
    const channelMessages = new Counter({
      name: 'switchyard_node_channel_messages_total',
      help: 'Node events received over node channels (WebSockets), by result: ok or the problem code',
      labelNames: ['result'],
      registers,
    });
    this.channelMessage = labelled(channelMessages, ['result'] as const);
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

  /** Where the open node channels are counted (the node routes own them). */
  trackEventStreams(count: () => number): void {
    this.eventStreams = count;
  }

  /** Where the events waiting for the store are counted (the event log). */
  trackEventLog(waiting: () => number): void {
    this.eventsWaiting = waiting;
  }

  trackChannels(count: () => number, backlog: () => number): void {
    this.openChannels = count;
    this.channelBacklog = backlog;
  }
}
