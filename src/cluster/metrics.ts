// Cluster mode's metrics (docs/cluster.md), read from the mechanism's own counters when scraped:
// groups owned here, lease renewals, acquisitions, losses and hand-overs, calls forwarded to other
// owners and served for them, whether NATS is reachable, how this instance's follower of the event
// log and its watches of the buckets keep up, and the logs: snapshots of the groups owned here
// (from their actors), and the groups this instance keeps a warm copy of.
import { Counter, Gauge, type Registry } from 'prom-client';
import { perScrape } from '../observability/metrics.js';
import type { ClusterEventLog } from './events.js';
import type { Forwarder } from './forward.js';
import type { SharedLimits } from './limits.js';
import type { Ownership } from './ownership.js';
import type { Standbys } from './standby.js';
import type { SnapshotStats } from './wal.js';
import { WEBHOOK_LEASE } from './webhook-keeping.js';

export interface LogSources {
  /** The snapshot figures of each group owned here (asked of its actor). */
  snapshots(): Promise<Array<{ group: string; stats: SnapshotStats }>>;
  standbys(): Standbys | null;
}

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
  logs: LogSources,
): void {
  registerLogMetrics(registry, logs);
  new Gauge({
    name: 'switchyard_cluster_groups_owned',
    help: 'Node groups this instance owns (runs the actor of) now',
    registers: [registry],
    collect() {
      this.set(
        ownership()
          ?.ownedGroups()
          .filter((g) => g !== WEBHOOK_LEASE).length ?? 0,
      );
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

function registerLogMetrics(registry: Registry, logs: LogSources): void {
  // Asked of the actors once per scrape, whichever gauges read it.
  const snapshots = perScrape(() => logs.snapshots());
  new Gauge({
    name: 'switchyard_cluster_standby_groups',
    help: 'Node groups this instance would take next and keeps a warm copy of (follows their logs)',
    registers: [registry],
    collect() {
      this.set(logs.standbys()?.following().length ?? 0);
    },
  });
  const perGroup = (name: string, help: string, read: (s: SnapshotStats) => number | null) =>
    new Gauge({
      name,
      help,
      labelNames: ['group'],
      registers: [registry],
      async collect() {
        this.reset();
        for (const { group, stats } of await snapshots()) {
          const v = read(stats);
          if (v !== null) this.set({ group }, v);
        }
      },
    });
  // Counted by each owner's actor since it acquired the group: mirrored at each scrape.
  const perGroupCount = (name: string, help: string, read: (s: SnapshotStats) => number) =>
    new Counter({
      name,
      help,
      labelNames: ['group'],
      registers: [registry],
      async collect() {
        this.reset();
        for (const { group, stats } of await snapshots()) this.inc({ group }, read(stats));
      },
    });
  perGroup('switchyard_cluster_log_entries_since_snapshot', "Entries appended to the group's log since its last snapshot (groups owned here)", (s) => s.since);
  perGroupCount('switchyard_cluster_snapshots_total', 'Snapshots of the group this owner published (since it acquired the group)', (s) => s.taken);
  perGroupCount('switchyard_cluster_snapshot_failures_total', 'Snapshots of the group that failed (NATS away; tried again after 10 s)', (s) => s.failed);
  perGroup('switchyard_cluster_snapshot_bytes', "The size of the group's last snapshot", (s) => s.last?.bytes ?? null);
  perGroup('switchyard_cluster_snapshot_seconds', 'How long writing and publishing the last snapshot took', (s) => (s.last ? s.last.ms / 1000 : null));
  perGroup('switchyard_cluster_snapshot_age_seconds', 'Time since the last snapshot of the group was published', (s) => (s.last ? (Date.now() - s.last.at) / 1000 : null));
}

/** Whether this instance sends the cluster's webhooks now (webhook-keeping.ts). */
export function registerWebhookSenderMetric(registry: Registry, sends: () => boolean): void {
  new Gauge({
    name: 'switchyard_cluster_webhook_sender',
    help: "1 while this instance sends the cluster's webhooks (it holds the webhooks lease), else 0",
    registers: [registry],
    collect() {
      this.set(sends() ? 1 : 0);
    },
  });
}
