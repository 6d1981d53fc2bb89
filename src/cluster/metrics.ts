// Cluster mode's metrics (docs/cluster.md), read from the mechanism's own counters when scraped:
// groups owned here, lease renewals, acquisitions, losses and hand-overs, calls forwarded to other
// owners and served for them, whether NATS is reachable, and how this instance's follower of the
// event log and its watches of the buckets keep up.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { ClusterEventLog } from './events.js';
import type { Forwarder } from './forward.js';
import type { SharedLimits } from './limits.js';
import type { Ownership } from './ownership.js';

/** A counter whose value is kept elsewhere and only grows: set to it at each scrape. */
function mirrored(registry: Registry, name: string, help: string, read: () => number): void {
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      this.reset();
      this.inc(read());
    },
  });
}

export function registerClusterMetrics(
  registry: Registry,
  ownership: () => Ownership | null,
  forwarder: Forwarder,
  events: ClusterEventLog,
  limits: () => SharedLimits | null,
  /** Restarts of each bucket's watch (watch.ts), by bucket. */
  watchRestarts: () => Record<string, number>,
  connected: () => boolean,
): void {
  new Gauge({
    name: 'switchyard_cluster_groups_owned',
    help: 'Node groups this instance owns (runs the actor of) now',
    registers: [registry],
    collect() {
      this.set(ownership()?.ownedGroups().length ?? 0);
    },
  });
  new Gauge({
    name: 'switchyard_cluster_nats_connected',
    help: '1 while this instance is connected to a NATS server',
    registers: [registry],
    collect() {
      this.set(connected() ? 1 : 0);
    },
  });
  const o = () => ownership()?.counters ?? { renewals: 0, losses: 0, acquisitions: 0, handovers: 0 };
  mirrored(registry, 'switchyard_cluster_lease_renewals_total', 'Lease renewals acknowledged', () => o().renewals);
  mirrored(registry, 'switchyard_cluster_lease_losses_total', 'Groups this instance stopped owning without handing them over (lease lost, taken over)', () => o().losses);
  mirrored(registry, 'switchyard_cluster_lease_acquisitions_total', 'Groups this instance acquired', () => o().acquisitions);
  mirrored(registry, 'switchyard_cluster_handovers_total', 'Groups this instance handed over to the instance ranked first for them', () => o().handovers);
  mirrored(registry, 'switchyard_cluster_forwarded_calls_total', 'Calls to a group actor forwarded to the instance that owns it', () => forwarder.counters.forwarded);
  mirrored(registry, 'switchyard_cluster_forward_retries_total', 'Forwarded calls sent again (no owner answered yet: a hand-over)', () => forwarder.counters.retried);
  mirrored(registry, 'switchyard_cluster_forward_failures_total', 'Forwarded calls that found no owner in time (answered 503 NOT_READY)', () => forwarder.counters.failed);
  mirrored(registry, 'switchyard_cluster_served_calls_total', 'Calls other instances forwarded here, to groups this instance owns', () => forwarder.counters.served);
  mirrored(
    registry,
    'switchyard_cluster_event_follower_restarts_total',
    "Times this instance's follower of the event log was made again (it stood still behind the stream, or ended)",
    () => events.follower.restarts,
  );
  new Counter({
    name: 'switchyard_cluster_limit_reports_total',
    help: 'Reports of lookups taken and of login outcomes, sent to the other instances or received from them (limits across instances)',
    labelNames: ['kind', 'direction'],
    registers: [registry],
    collect() {
      this.reset();
      const c = limits()?.counters ?? { lookupsSent: 0, lookupsReceived: 0, loginsSent: 0, loginsReceived: 0 };
      this.inc({ kind: 'lookups', direction: 'sent' }, c.lookupsSent);
      this.inc({ kind: 'lookups', direction: 'received' }, c.lookupsReceived);
      this.inc({ kind: 'logins', direction: 'sent' }, c.loginsSent);
      this.inc({ kind: 'logins', direction: 'received' }, c.loginsReceived);
    },
  });
  new Counter({
    name: 'switchyard_cluster_watch_restarts_total',
    help: "Times this instance's watch of a bucket (leases, instances, meta) was made again: it stood still behind the bucket, or ended",
    labelNames: ['bucket'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [bucket, n] of Object.entries(watchRestarts())) this.inc({ bucket }, n);
    },
  });
  new Gauge({
    name: 'switchyard_cluster_event_follower_lag',
    help: "Events of the cluster's log this instance had not read at its last check (about every second)",
    registers: [registry],
    collect() {
      this.set(events.follower.lag);
    },
  });
}
