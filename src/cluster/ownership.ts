// Which instance owns each node group (docs/cluster.md): the mechanism around the pure rules of
// src/policy/cluster/lease.ts and hrw.ts. A lease is a key of the `sy_leases` bucket (max_age =
// the lease's TTL); its acquiring revision is the owner's epoch. Every 100 ms this looks at every
// group: an owner renews (every TTL/3) and hands a group over when a live instance ranks first for
// it (one group per period); a non-owner contends when the rules say so. Which instances are
// live is presence.ts's: a key per instance in `sy_instances`, put every second. The bucket's
// requests, as what they found, are lease-bucket.ts's.
import type { KV, KvWatchEntry } from '@nats-io/kv';
import type { Logger } from 'pino';
import {
  acquired,
  afterConflict,
  afterCut,
  beforeRenewal,
  calmToHandOver,
  conflicted,
  firstSight,
  probed,
  reacquired,
  renewed,
  sawDelete,
  sawPut,
  serving,
  shouldContend,
  watching,
  type LeaseTiming,
  type OwnerState,
  type Watching,
} from '../policy/cluster/lease.js';
import { contenderPlace, handover } from '../policy/cluster/hrw.js';
import { LeaseBucket } from './lease-bucket.js';
import { Presence } from './presence.js';
import { GuardedWatch } from './watch.js';

export interface InstanceInfo {
  id: string;
  /** How node agents and other instances reach it over HTTP. */
  url: string;
  startedAt: number;
  groups: number;
}

export interface OwnershipHooks {
  /** The node groups that exist. */
  groups(): string[];
  /** Start serving the group here at `epoch` (load, fence, answer calls); throws if it cannot. */
  acquire(group: string, epoch: number): Promise<void>;
  /** Stop serving it here (lost, or handed over). */
  release(group: string, reason: string): Promise<void>;
  /** Start it again here at a new epoch (acquired again after a cut): release, then acquire. */
  restart(group: string, epoch: number): Promise<void>;
  /** Another owner for a group, for events and metrics. */
  changed?(group: string, owner: string | null, epoch: number | null): void;
}

interface Owned {
  state: OwnerState;
  nextAt: number;
  busy: boolean;
  /** Not yet serving: the actor is loading and fencing. */
  starting: boolean;
  acquiredAt: number;
  /** When the connection to NATS went down while this was held: renewed by `resume` once it is back. */
  cutAt: number | null;
  /** The last renewal attempts (what, sent when, how long): logged with a loss, to tell a stall from an election. */
  trail: Array<{ outcome: string; sentAt: number; tookMs: number }>;
}

/** How often a non-owner asks whether the lease bucket answers: at the first tick (every 100 ms) this long after the last; an answer vouches for up to a tick more. */
const PROBE_MS = 250;

export class Ownership {
  private readonly owned = new Map<string, Owned>();
  private readonly watched = new Map<string, Watching>();
  /** Owners as the lease watch last showed them. */
  private readonly owners = new Map<string, { owner: string; epoch: number }>();
  private timer: NodeJS.Timeout | null = null;
  private lastProbe = 0;
  private lastHandover = 0;
  private available = false;
  /** The connection to every NATS server is down. */
  private cut = false;
  private stopping = false;
  private readonly leaseWatch: GuardedWatch;
  readonly counters = { renewals: 0, losses: 0, acquisitions: 0, handovers: 0 };
  private readonly presence: Presence;
  private readonly leases: LeaseBucket;

  constructor(
    leases: KV,
    instances: KV,
    private readonly me: InstanceInfo,
    private readonly t: LeaseTiming,
    private readonly hooks: OwnershipHooks,
    private readonly log: Logger,
    private readonly clock: () => number = () => performance.timeOrigin + performance.now(),
  ) {
    this.presence = new Presence(instances, me, log, clock);
    this.leases = new LeaseBucket(leases, me);
    this.leaseWatch = new GuardedWatch(leases, (e) => this.sawLease(e), 'leases', log);
  }

  async start(): Promise<void> {
    this.lastHandover = this.clock();
    await this.presence.put(this.owned.size);
    await this.leaseWatch.start();
    await this.presence.watch();
    this.timer = setInterval(() => {
      this.renewals();
      void this.tick();
    }, 100);
  }

  /** Whether this instance may answer for the group now (checked on every call). */
  serving(group: string): boolean {
    const o = this.owned.get(group);
    // Back from a cut, an owner goes on as if cut until its first renewal has decided (`resume`):
    // JetStream may take seconds to elect its leaders after NATS returns, and a group that stopped
    // answering meanwhile would fail its own nodes' heartbeats and fault them.
    return !!o && !o.starting && serving(o.state, this.clock(), this.t, this.cut || o.cutAt !== null);
  }

  /** Whether this instance holds the group's lease and it is good now, starting or not (the webhooks sender: runtime.ts). */
  holds(group: string): boolean {
    const o = this.owned.get(group);
    return !!o && serving(o.state, this.clock(), this.t, this.cut || o.cutAt !== null);
  }

  /** The connection to NATS went down (true) or came back (false). */
  setCut(cut: boolean): void {
    if (cut === this.cut) return;
    this.cut = cut;
    const now = this.clock();
    if (cut) for (const o of this.owned.values()) o.cutAt ??= now;
    // Back (a reconnection to another server takes ms): a lease still good goes on as usual, riding
    // through an election if need be; one that ran out meanwhile is resumed (`resume`).
    else for (const o of this.owned.values()) if (o.cutAt !== null && serving(o.state, now, this.t)) o.cutAt = null;
    this.log.warn({ groups: this.ownedGroups() }, cut ? 'NATS unreachable: owned groups answer reads only until it is back' : 'NATS reachable again');
  }

  epoch(group: string): number | undefined {
    const o = this.owned.get(group);
    return o?.state.kind === 'held' ? o.state.held.epoch : this.owners.get(group)?.epoch;
  }

  /** The owner the lease names (this instance's id for its own), if any. */
  owner(group: string): string | null {
    if (this.owned.has(group)) return this.me.id;
    return this.owners.get(group)?.owner ?? null;
  }

  ownedGroups(): string[] {
    return [...this.owned.keys()];
  }

  /** The live instances (this one included), by id. */
  live(): InstanceInfo[] {
    return this.presence.live();
  }

  /** Restarts of the lease and presence watches (watch.ts), for metrics. */
  watchRestarts(): { leases: number; instances: number } {
    return { leases: this.leaseWatch.counters.restarts, instances: this.presence.watchRestarts() };
  }

  private sawLease(e: KvWatchEntry): void {
    const now = this.clock();
    if (e.operation === 'PUT') {
      const v = e.json<{ owner: string; epoch: number }>();
      this.owners.set(e.key, v);
      if (v.owner !== this.me.id) {
        this.watched.set(e.key, sawPut(this.watched.get(e.key) ?? watching(now), v.owner, now));
        // Someone else's lease on a group we think ours: we lost it, whatever our clock says.
        if (this.owned.has(e.key)) void this.lose(e.key, `instance ${v.owner} acquired it`);
      }
    } else {
      this.owners.delete(e.key);
      this.watched.set(e.key, sawDelete(this.watched.get(e.key) ?? watching(now)));
    }
    this.hooks.changed?.(e.key, this.owners.get(e.key)?.owner ?? null, this.owners.get(e.key)?.epoch ?? null);
  }

  private ticking = false;

  private async tick(): Promise<void> {
    if (this.ticking || this.stopping) return;
    this.ticking = true;
    try {
      const now = this.clock();
      if (this.presence.due(now)) void this.presence.put(this.owned.size).catch(() => {});
      if (now - this.lastProbe >= PROBE_MS) await this.probe(now);
      const ids = this.live().map((i) => i.id);
      for (const group of this.hooks.groups()) {
        if (this.owned.has(group)) continue;
        let w = this.watched.get(group);
        if (!w) {
          w = await this.initial(group, now);
          if (!w) continue;
        }
        if (this.available && shouldContend(w, contenderPlace(group, ids, this.me.id, w.owner), now, this.t)) await this.contend(group);
      }
      // Not while the bucket has no leader: the hand-over's delete could not land (calmToHandOver).
      const calm = calmToHandOver(
        [...this.owned.values()].map((o) => o.state),
        this.available,
      );
      const held = calm ? [...this.owned].filter(([g, o]) => this.serving(g) && now - o.acquiredAt >= this.t.holdMs).map(([g]) => g) : [];
      const settled = ids.filter((id) => id === this.me.id || now - (this.presence.since(id) ?? now) >= this.t.settledMs);
      const h = handover(held, settled, this.me.id, this.lastHandover, now, this.t.handoverEveryMs);
      if (h) {
        this.lastHandover = now;
        this.counters.handovers++;
        this.log.info({ group: h.group, to: h.to }, 'handing a node group over to the instance that ranks first for it');
        await this.giveBack(h.group, `handed over to ${h.to}`);
      }
    } catch (err) {
      this.log.debug({ err }, 'ownership tick');
    } finally {
      this.ticking = false;
    }
  }

  /** Renewals due: apart from the rest of the tick, which may wait on a bucket without a leader. */
  private renewals(): void {
    if (this.stopping || this.cut) return;
    const now = this.clock();
    // Also while the actor starts (catching up with a long log can outlast the lease).
    for (const [group, o] of this.owned) if (!o.busy && now >= o.nextAt) void this.renew(group, o);
  }

  /** Whether the lease bucket answers (its leader is there): a contender's clock runs only then. */
  private async probe(now: number): Promise<void> {
    const elapsed = this.lastProbe === 0 ? 0 : now - this.lastProbe;
    this.lastProbe = now;
    this.available = await this.leases.answers();
    for (const [group, w] of this.watched) this.watched.set(group, probed(w, this.available, elapsed, PROBE_MS + 100));
  }

  /** A group first seen: its lease as stored now (absent: free at once). */
  private async initial(group: string, now: number): Promise<Watching | undefined> {
    const seen = await this.leases.sight(group);
    if (!seen) return undefined;
    if (!this.watched.has(group)) this.watched.set(group, firstSight(seen, now));
    return this.watched.get(group);
  }

  private async contend(group: string): Promise<void> {
    const sentAt = this.clock();
    const created = await this.leases.create(group);
    if (created.kind !== 'ok') {
      // Still held (a renewal not seen yet, or the key not aged out yet): again after a probe. No leader: the probe will tell.
      if (created.kind === 'conflict') this.watched.set(group, conflicted(this.watched.get(group) ?? watching(sentAt), this.t, PROBE_MS));
      return;
    }
    const epoch = created.revision;
    const o: Owned = { state: acquired(epoch, sentAt), nextAt: sentAt + this.t.renewMs, busy: false, starting: true, acquiredAt: sentAt, cutAt: null, trail: [] };
    this.owned.set(group, o);
    this.watched.delete(group);
    this.counters.acquisitions++;
    try {
      await this.hooks.acquire(group, epoch);
      o.starting = false;
      this.log.info({ group, epoch, startMs: Math.round(this.clock() - sentAt) }, 'acquired a node group');
    } catch (err) {
      this.log.warn({ group, epoch, err }, 'acquired a node group but could not start serving it: handing it back');
      await this.giveBack(group, `could not start: ${(err as Error).message}`);
    }
  }

  private async renew(group: string, o: Owned): Promise<void> {
    o.busy = true;
    try {
      if (o.cutAt !== null) return void (await this.resume(group, o));
      const now = this.clock();
      o.state = beforeRenewal(o.state, now, this.t);
      if (o.state.kind !== 'held') return void (await this.lose(group, o.state.reason, o));
      const held = o.state.held;
      const sentAt = now;
      const outcome = await this.leases.renew(group, held.epoch, held.revision);
      if (this.owned.get(group) !== o) return;
      o.state = renewed(o.state, outcome, sentAt, this.clock(), this.t, o.cutAt !== null);
      o.trail = [...o.trail.slice(-7), { outcome: outcome.kind === 'ok' ? 'ok' : `${outcome.kind} (${this.leases.lastError})`, sentAt, tookMs: Math.round(this.clock() - sentAt) }];
      if (outcome.kind !== 'ok') this.log.debug({ group, outcome: outcome.kind, tookMs: Math.round(this.clock() - sentAt), state: o.state }, 'a lease renewal failed');
      if (outcome.kind === 'ok') this.counters.renewals++;
      if (o.state.kind === 'held' && outcome.kind === 'conflict') {
        // Each step after a conflict is an attempt of its own: one that finds no leader rides on.
        const readAt = this.clock();
        const read = await this.leases.read(group);
        const next = afterConflict(o.state, read, readAt, this.clock(), this.t, o.cutAt !== null);
        o.state = next.state;
        if (next.reacquire) {
          const sent = this.clock();
          const created = await this.leases.create(group);
          o.state = reacquired(o.state, created, sent, this.clock(), this.t, o.cutAt !== null);
          if (created.kind === 'ok' && o.state.kind === 'held') this.log.warn({ group, epoch: created.revision }, 'the lease had expired while NATS elected a leader: acquired it again');
        }
      }
      if (o.state.kind !== 'held') return void (await this.lose(group, o.state.reason));
      o.nextAt = this.clock() + (outcome.kind === 'ok' ? this.t.renewMs : 250);
    } finally {
      o.busy = false;
    }
  }

  /** The first renewal after a cut: the lease may have run out, or been taken, meanwhile. */
  private async resume(group: string, o: Owned): Promise<void> {
    if (o.state.kind !== 'held') return;
    const held = o.state.held;
    const sentAt = this.clock();
    const outcome = await this.leases.renew(group, held.epoch, held.revision);
    if (this.owned.get(group) !== o) return;
    o.nextAt = this.clock() + 250;
    if (outcome.kind === 'unavailable') return;
    o.cutAt = null;
    if (outcome.kind === 'ok') {
      o.state = { kind: 'held', held: { ...held, revision: outcome.revision, confirmedSentAt: sentAt, riding: null } };
      o.nextAt = this.clock() + this.t.renewMs;
      return;
    }
    const next = afterCut(o.state, await this.leases.read(group));
    o.state = next.state;
    if (next.state.kind !== 'held') return void (await this.lose(group, next.state.reason));
    if (!next.reacquire) return;
    const sent = this.clock();
    const created = await this.leases.create(group);
    if (created.kind !== 'ok') return void (await this.lose(group, 'the lease ran out while NATS was unreachable, and another instance took it'));
    o.state = acquired(created.revision, sent);
    o.starting = true;
    this.log.warn({ group, epoch: created.revision }, 'the lease ran out while NATS was unreachable: acquired it again; the actor restarts from the log');
    try {
      await this.hooks.restart(group, created.revision);
      o.starting = false;
      o.nextAt = this.clock() + this.t.renewMs;
    } catch (err) {
      await this.giveBack(group, `could not restart: ${(err as Error).message}`);
    }
  }

  /** The group is not ours any more: stop serving it at once. */
  private async lose(group: string, reason: string, o?: Owned): Promise<void> {
    if (!this.owned.delete(group)) return;
    this.counters.losses++;
    const now = this.clock();
    this.log.warn({ group, reason, attempts: o?.trail.map((a) => `${a.outcome} sent ${Math.round(now - a.sentAt)} ms ago, took ${a.tookMs} ms`) }, 'lost a node group');
    this.watched.set(group, watching(this.clock()));
    await this.hooks.release(group, reason).catch((err: Error) => this.log.error({ group, err }, 'stopping a lost node group failed'));
  }

  /** Stops serving the group, then hands its lease back (a CAS delete): the next owner sees it at once. */
  private async giveBack(group: string, reason: string): Promise<void> {
    const o = this.owned.get(group);
    if (!o) return;
    this.owned.delete(group);
    await this.hooks.release(group, reason).catch((err: Error) => this.log.error({ group, err }, 'stopping a node group failed'));
    if (o.state.kind === 'held') await this.leases.release(group, o.state.held.revision);
    this.watched.set(group, watching(this.clock()));
  }

  /** The group's actor found a later owner's entries in its log: it is not ours, whatever the lease says. */
  fenced(group: string): void {
    void this.lose(group, "its log holds a later owner's entries");
  }

  /** A group was deleted: forget it (and its lease, if ours). */
  async forget(group: string): Promise<void> {
    await this.giveBack(group, 'the node group was deleted');
    this.watched.delete(group);
  }

  /** A clean stop: every group handed back, one after the other, and this instance gone from the list. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    while (this.ticking) await new Promise((r) => setTimeout(r, 10));
    // Gone from the list first: the others rank the groups without this instance, so the one that
    // now ranks first takes each group as soon as its lease is handed back.
    await this.presence.leave().catch(() => {});
    for (const group of [...this.owned.keys()]) await this.giveBack(group, 'this instance is stopping');
    this.leaseWatch.stop();
    this.presence.stop();
  }
}
