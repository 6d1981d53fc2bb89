// Cluster mode's entry (docs/cluster.md), loaded by src/root/service.ts only when `cluster` is
// configured: the NATS connection, the buckets and streams, this instance's id, and the wiring of
// ownership (which instance runs which group's actor), forwarding (how the others reach it),
// shared state (signing key, users, node tokens, node groups) and the cluster's event log.
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { ActorHost, ClusterSeam } from '../../actors/host.js';
import type { LoginThrottle } from '../auth/login-throttle.js';
import type { LookupRateLimiter } from '../auth/lookup-rate.js';
import type { NodeTokens } from '../auth/node-tokens.js';
import type { SharedUsers, UserRecord, Users } from '../auth/users.js';
import type { ClusterConfig } from '../config/types.js';
import type { ClusterView } from '../http/services.js';
import type { GroupSharing } from '../nodegroups/registry.js';
import type { Store, StoredGroup } from '../store/store.js';
import { leaseTiming } from '../policy/cluster/lease.js';
import { standbyOf } from '../policy/cluster/hrw.js';
import type { Registry } from 'prom-client';
import { ClusterEventLog } from '../cluster/events.js';
import { registerClusterMetrics, registerWebhookSenderMetric } from '../cluster/metrics.js';
import { Forwarder } from '../cluster/forward.js';
import { SharedLimits } from '../cluster/limits.js';
import { connectNats, jet, provision, STREAMS, walSubject, type Buckets, type Jet } from '../cluster/nats.js';
import { Ownership, type InstanceInfo, type OwnershipHooks } from '../cluster/ownership.js';
import { keyOf, SharedState } from '../cluster/shared-state.js';
import { COMPACTS_LOGS, GroupSnapshots } from '../cluster/snapshots.js';
import { Standbys } from '../cluster/standby.js';
import type { SnapshotStats } from '../cluster/wal.js';
import { TerraformState } from '../cluster/terraform-state.js';
import { ClusterWebhookKeeping, WEBHOOK_LEASE, WebhookSender } from '../cluster/webhook-keeping.js';
import type { Webhooks } from '../webhooks/webhooks.js';
import type { EventBody } from '../domain/events.js';

/** The calls another instance may make on a group's actor here (never the supervisor's wiring). */
const FORWARDABLE = new Set(['lookups', 'heartbeats', 'putProvision', 'deleteProvision', 'getProvision', 'listProvisions', 'listStreams', 'detail', 'counts', 'hasNode', 'nodeEvent', 'reconfigure']);

/** This instance's id: configured, or generated once and kept in the data directory. */
export function instanceIdOf(config: ClusterConfig, dataDir: string): string {
  if (config.instanceId) return config.instanceId;
  const file = join(dataDir, 'instance-id');
  try {
    const kept = readFileSync(file, 'utf8').trim();
    if (/^[A-Za-z0-9_-]{1,64}$/.test(kept)) return kept;
  } catch {
    /* first start */
  }
  const id = `sy-${randomBytes(4).toString('hex')}`;
  writeFileSync(file, `${id}\n`, { mode: 0o600 });
  return id;
}

export class ClusterRuntime {
  readonly shared: SharedState;
  readonly events: ClusterEventLog;
  readonly forwarder: Forwarder;
  ownership: Ownership | null = null;
  standbys: Standbys | null = null;
  private standbyTimer: NodeJS.Timeout | null = null;
  private tfstate: TerraformState | null = null;
  private limits: SharedLimits | null = null;
  private host: ActorHost | null = null;
  private url = '';
  private hooks: { keeping: ClusterWebhookKeeping; sender: WebhookSender | null } | null = null;

  private constructor(
    readonly config: ClusterConfig,
    readonly instance: string,
    private readonly j: Jet,
    private readonly buckets: Buckets,
    private readonly log: Logger,
  ) {
    this.shared = new SharedState(buckets.meta, log);
    this.events = new ClusterEventLog(j, instance, log);
    this.forwarder = new Forwarder(j.nc);
  }

  /** Connects (waiting for NATS as long as it takes: `onWaiting` says why meanwhile) and makes the buckets and streams. */
  static async connect(config: ClusterConfig, instance: string, log: Logger, onWaiting: (why: string) => void): Promise<ClusterRuntime> {
    for (let attempt = 1; ; attempt++) {
      try {
        const nc = await connectNats(config.servers, `switchyard:${instance}`);
        for (let tries = 1; ; tries++) {
          try {
            const j = await jet(nc);
            const buckets = await provision(j, config.replicas, config.leaseTtl);
            log.info({ instance, servers: config.servers, replicas: config.replicas }, 'connected to NATS JetStream');
            return new ClusterRuntime(config, instance, j, buckets, log);
          } catch (err) {
            const why = `NATS JetStream is not ready (${(err as Error).message}); retrying`;
            onWaiting(why);
            if (tries % 10 === 1) log.warn({ err }, why);
            await new Promise((r) => setTimeout(r, 500));
          }
        }
      } catch (err) {
        const why = `cannot reach NATS at ${config.servers.join(', ')} (${(err as Error).message}); retrying`;
        onWaiting(why);
        if (attempt % 10 === 1) log.warn(why);
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }

  /** What the actor host needs: who serves what, and how to reach the owner. */
  seam(): ClusterSeam {
    return {
      servers: this.config.servers,
      instance: this.instance,
      snapshot: { entries: this.config.snapshotEntries, intervalMs: this.config.snapshotInterval },
      serving: (group) => this.ownership?.serving(group) ?? false,
      owned: (group) => this.ownership?.owner(group) != null,
      forward: (group, method, args) => this.forwarder.call(group, method, args),
      fenced: (group) => void this.ownership?.fenced(group),
    };
  }

  groupSharing(): GroupSharing {
    return {
      get: (name) => this.shared.get<StoredGroup>(keyOf('group', name)),
      put: (name, record) => this.shared.put(keyOf('group', name), record),
      remove: async (name) => {
        await this.shared.remove(keyOf('group', name));
        await this.purge(name);
      },
    };
  }

  /** The Terraform groups' state and locks (the http backend's store): accepted only from the group's owner. */
  terraformState(emit: (events: EventBody[]) => void): TerraformState {
    this.tfstate ??= new TerraformState({
      kv: this.buckets.tfstate,
      instance: this.instance,
      servingEpoch: (group) => (this.ownership?.serving(group) ? (this.ownership.epoch(group) ?? null) : null),
      // Room for the message's headers under the server's limit (1 MiB unless configured).
      maxBytes: () => (this.j.nc.info?.max_payload ?? 1 << 20) - 8192,
      emit,
      log: this.log,
    });
    return this.tfstate;
  }

  /** What the front end shows of the cluster (readiness, heartbeat replies, metrics). */
  view(): ClusterView {
    return {
      instance: this.instance,
      owner: (group) => this.ownership?.owner(group) ?? null,
      urls: () => this.urls(),
      connected: () => this.connected(),
    };
  }

  sharedUsers(): SharedUsers {
    return {
      get: (name) => this.shared.get<UserRecord>(keyOf('user', name)),
      put: (user) => this.shared.put(keyOf('user', user.username), user),
    };
  }

  /** Every instance's changes to users, node token generations and node groups, applied here. */
  async follow(users: Users, nodeTokens: NodeTokens, groups: (name: string, value: unknown) => void): Promise<void> {
    nodeTokens.share((name, generation) => this.shared.overwrite(keyOf('nodegen', name), generation));
    await this.shared.watch({
      user: (user, name) => users.adopt(name, user),
      nodeGeneration: (name, value) => nodeTokens.adopt(name, value),
      group: groups,
      webhook: (id, value) => this.hooks?.keeping.sawEndpoint(id, value),
      webhookState: (id, value) => this.hooks?.keeping.sawState(id, value),
    });
  }

  /** Starts taking node groups: their actors run here while this instance owns them; `store` keeps the copies of those it would take next. */
  async own(host: ActorHost, url: string, store: Store): Promise<void> {
    this.url = url;
    this.host = host;
    const standbys = new Standbys(this.j, this.buckets.snapshots, store, this.log);
    this.standbys = standbys;
    // `caps`: what this version does that others must know of before they rely on it (snapshots.ts: logs are purged only once every live instance reads snapshots).
    const advertised = { id: this.instance, url, startedAt: Date.now(), groups: 0, caps: [COMPACTS_LOGS] };
    const info: InstanceInfo = advertised;
    const hooks: OwnershipHooks = {
      groups: () => [...host.groups.keys(), ...(this.hooks?.sender ? [WEBHOOK_LEASE] : [])],
      acquire: async (group, epoch) => {
        if (group === WEBHOOK_LEASE) return this.leadWebhooks(true);
        const handle = host.group(group);
        if (!handle) throw new Error(`node group '${group}' is not known here`);
        // A warm copy stops growing before the actor reads it: one writer per group on this store.
        await standbys.release(group);
        // What the planner remembers (cooldowns) is the group's, in its log and snapshots: a
        // takeover does not scale again what was just scaled.
        await handle.activate(epoch);
        this.forwarder.serve(
          group,
          () => this.ownership!.serving(group) && handle.running,
          (method, args) => {
            if (!FORWARDABLE.has(method)) return Promise.reject(new Error(`'${method}' cannot be forwarded`));
            return (handle.callHere as (m: string, ...a: unknown[]) => Promise<unknown>)(method, ...args);
          },
        );
        host.options.onEvents([{ type: 'cluster.owner', group, owner: this.instance, epoch }]);
      },
      release: async (group, reason) => {
        if (group === WEBHOOK_LEASE) return this.leadWebhooks(false);
        this.forwarder.unserve(group);
        await host.group(group)?.deactivate();
        host.options.onEvents([{ type: 'cluster.released', group, owner: this.instance, reason }]);
      },
      restart: async (group, epoch) => {
        await hooks.release(group, 'acquired again at a new epoch');
        await hooks.acquire(group, epoch);
      },
    };
    this.ownership = new Ownership(this.buckets.leases, this.buckets.instances, info, leaseTiming(this.config.leaseTtl), hooks, this.log);
    await this.ownership.start();
    this.watchConnection((up) => this.ownership?.setCut(!up));
    this.standbyTimer = setInterval(() => void this.followStandbys(), 1000);
  }

  // ---- webhooks (webhook-keeping.ts): one sender for the cluster, the holder of WEBHOOK_LEASE ----

  /** Where webhook endpoints and delivery states are kept: shared by every instance. */
  webhookKeeping(): ClusterWebhookKeeping {
    this.hooks ??= { keeping: new ClusterWebhookKeeping(this.shared, () => !!this.hooks?.sender?.leading, this.log), sender: null };
    return this.hooks.keeping;
  }

  /** Whether this instance sends webhooks now: it holds the lease, and it is good. */
  sendsWebhooks(): boolean {
    return !!this.hooks?.sender?.leading && (this.ownership?.holds(WEBHOOK_LEASE) ?? false);
  }

  /** The service's webhooks, driven from here: endpoints made elsewhere adopted, sending while the lease is ours. */
  async driveWebhooks(webhooks: Webhooks): Promise<void> {
    const keeping = this.webhookKeeping();
    this.hooks!.sender = new WebhookSender(keeping, webhooks);
    keeping.onEndpoint = (id, e) => webhooks.adopt(id, e);
    await keeping.load();
  }

  private async leadWebhooks(lead: boolean): Promise<void> {
    const sender = this.hooks?.sender;
    if (!sender) return;
    if (!lead) return sender.unlead();
    await sender.lead();
    this.log.info('sending webhooks for the cluster');
  }

  /** The groups this instance would take next (and does not own): their copies follow their logs. */
  private async followStandbys(): Promise<void> {
    const ownership = this.ownership;
    if (!ownership || !this.host || !this.standbys) return;
    const live = ownership.live().map((i) => i.id);
    const want = new Set<string>();
    for (const [group, handle] of this.host.groups) {
      const owner = ownership.owner(group);
      // Not while its actor still runs here (a group just lost is closing): one writer per group on this store.
      if (owner !== this.instance && !handle.threadHere && standbyOf(group, live, owner) === this.instance) want.add(group);
    }
    await this.standbys.set(want).catch((err: Error) => this.log.warn({ err }, 'standby: could not change the groups followed'));
  }

  /** Lookup rates and login throttles held for the cluster: each instance tells the others what it counted (limits.ts). */
  shareLimits(lookups: LookupRateLimiter, logins: LoginThrottle): void {
    this.limits = new SharedLimits(this.j.nc, this.instance, lookups, logins, this.log);
    this.limits.start();
  }

  /** Its metrics, on the service's registry. */
  registerMetrics(registry: Registry): void {
    registerWebhookSenderMetric(registry, () => this.sendsWebhooks());
    registerClusterMetrics(
      registry,
      () => this.ownership,
      this.forwarder,
      this.events,
      () => this.limits,
      () => ({ ...(this.ownership?.watchRestarts() ?? { leases: 0, instances: 0 }), meta: this.shared.watchRestarts() }),
      () => this.connected(),
      {
        standbys: () => this.standbys,
        snapshots: async () => {
          const out: Array<{ group: string; stats: SnapshotStats }> = [];
          for (const group of this.ownership?.ownedGroups() ?? []) {
            const stats = await this.host
              ?.group(group)
              ?.callHere('snapshotStats')
              .catch(() => null);
            if (stats) out.push({ group, stats });
          }
          return out;
        },
      },
    );
  }

  /** The live instances' URLs (this one first): node agents fail over to them. */
  urls(): string[] {
    const live = this.ownership?.live() ?? [];
    return [this.url, ...live.map((i) => i.url).filter((u) => u !== this.url)];
  }

  /** A deleted group's log (and its snapshots) goes with it. */
  async purge(group: string): Promise<void> {
    await this.ownership?.forget(group);
    await this.standbys?.release(group);
    await new GroupSnapshots(this.j, this.buckets.snapshots, group).remove().catch((err: Error) => this.log.warn({ err, group }, 'could not remove the snapshots of a deleted node group'));
    await this.tfstate?.purge(group).catch((err: Error) => this.log.warn({ err, group }, 'could not purge the Terraform state of a deleted node group'));
    await this.j.jsm.streams.purge(STREAMS.wal, { filter: walSubject(group) }).catch((err: Error) => this.log.warn({ err, group }, 'could not purge the log of a deleted node group'));
  }

  /** Whether NATS is reachable now (for /readyz). */
  connected(): boolean {
    return !this.j.nc.isClosed() && this.j.nc.getServer() !== '' && this.reachable;
  }

  private reachable = true;

  watchConnection(onChange: (up: boolean) => void): void {
    void (async () => {
      for await (const s of this.j.nc.status()) {
        if (s.type === 'disconnect') {
          this.reachable = false;
          onChange(false);
        } else if (s.type === 'reconnect') {
          this.reachable = true;
          onChange(true);
        }
      }
    })().catch(() => {});
  }

  /** A clean stop: every owned group handed back (the next owners take them at once), then the connection. */
  async stop(): Promise<void> {
    if (this.standbyTimer) clearInterval(this.standbyTimer);
    await this.standbys?.stop();
    await this.ownership?.stop();
    this.limits?.stop();
    this.events.stop();
    this.shared.stop();
    await this.j.nc.drain().catch(() => {});
  }
}
