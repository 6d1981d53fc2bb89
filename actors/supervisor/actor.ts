// Worker-thread entry of the supervisor actor. Every tick it asks each node-group actor for its
// plan (src/policy/scaling, pure, run beside the group's nodes so that only actions cross the
// thread) and carries it out through the group's platform: faults, drains, creations to keep
// every rule at its min, destructions (after the cluster-autoscaler: policy apart from actuation).
// The cooldowns, the platform operations under way and the capacity lookups asked for are the
// supervisor's, and go with each request for a plan.
import { parentPort, type MessagePort } from 'node:worker_threads';
import { setTimeout as sleep } from 'node:timers/promises';
import * as Comlink from 'comlink';
import type { NodeGroup } from '../../src/config/types.js';
import type { EventBody } from '../../src/domain/events.js';
import { ruleKey } from '../../src/domain/scaling.js';
import type { Role } from '../../src/domain/vocabulary.js';
import { TokenSigner, type SigningKey } from '../../src/auth/tokens.js';
import type { Platform } from '../../src/platforms/platform.js';
import type { NodeFacts } from '../../src/policy/scaling/facts.js';
import type { Action } from '../../src/policy/scaling/plan.js';
import { surviveCommitFailures } from '../../src/store/failures.js';
import { nodeEndpoint } from '../comlink.js';
import { Directory, type Attached, type KeptCooldowns } from './directory.js';
import { ACTOR_RETURN_MS, Operations } from './operations.js';
import { GroupPlatforms, type PlatformSettings } from './platforms.js';

export interface SupervisorInit extends PlatformSettings {
  /** Node tokens are signed here: the same key as the front end's. */
  jwtKey: SigningKey;
  tickMs: number;
  events: MessagePort;
}

class Supervisor {
  private readonly groups = new Directory();
  private platforms!: GroupPlatforms;
  private operations!: Operations;
  private init!: SupervisorInit;
  private running = false;
  private stopped: Promise<void> = Promise.resolve();
  private wake = new AbortController();
  private lastTick = 0;

  start(init: SupervisorInit): void {
    this.init = init;
    this.platforms = new GroupPlatforms(init, new TokenSigner(init.jwtKey), (events) => this.emit(events));
    this.operations = new Operations(
      this.groups,
      (events) => this.emit(events),
      () => this.poke(),
      () => this.running,
    );
    this.running = true;
    this.stopped = this.loop();
  }

  attachGroup(group: NodeGroup, port: MessagePort, retiring = false, kept?: KeptCooldowns): void {
    this.groups.attach(group, port, retiring, kept);
    this.poke();
  }

  /** A group's cooldowns, for the next owner (cluster mode). */
  cooldowns(name: string): KeptCooldowns | null {
    const g = this.groups.get(name);
    return g ? { lastScaled: [...g.lastScaled], requested: [...g.requested] } : null;
  }

  detachGroup(name: string): void {
    this.groups.detach(name);
    // Cluster mode: gone to another instance (or deleted): its Terraform runner goes too.
    if (this.init.terraform.backend) this.platforms.release(name);
  }

  reconfigure(group: NodeGroup): void {
    const g = this.groups.get(group.name);
    if (g) g.group = group;
    this.platforms.reconfigure(group);
  }

  /** Starts retiring a group's nodes; the group is reported `drained` when none are left. */
  retireGroup(name: string): void {
    const g = this.groups.get(name);
    if (!g) return;
    g.retiring = true;
    this.poke();
  }

  /** A lookup found no room: plan a scale-out at the next tick, which starts now. */
  requestCapacity(group: string, role: Role, region: string, reason: string): void {
    const g = this.groups.get(group);
    if (!g) return;
    g.requests.push({ role, region, reason });
    this.poke();
  }

  status(): { running: boolean; lastTick: number; busy: number; groups: string[] } {
    return { running: this.running, lastTick: this.lastTick, busy: this.operations.busy.size, groups: this.groups.names() };
  }

  /** Stops the loop; with `stopNodes`, stops the nodes that run on this machine and forgets them (clean shutdown). */
  async stop(stopNodes: boolean): Promise<void> {
    this.running = false;
    this.poke();
    await this.stopped;
    await this.operations.settled();
    await this.platforms.close();
    if (!stopNodes) return;
    for (const name of this.groups.names()) {
      try {
        await this.stopNodesHere(name);
      } catch (err) {
        // Agents left running give up on their own after orphanTimeout; the next start adopts or replaces them.
        this.emit([{ type: 'platform.error', group: name, operation: 'destroy', message: `nodes on this machine left running: ${(err as Error).message}` }]);
      }
    }
  }

  private async stopNodesHere(name: string): Promise<void> {
    // A group whose thread is restarting is waited for: only its actor knows its nodes.
    const g = await this.groups.current(name, ACTOR_RETURN_MS);
    if (!g) throw new Error(`the actor of node group '${name}' did not come back`);
    const platform = this.platforms.of(g.group);
    if (!platform.capabilities.stopsWithService) return;
    const nodes = await g.api.facts();
    await platform.shutdown(nodes);
    const now = Date.now();
    for (const n of nodes) {
      await g.api.nodeEvent(n.id, { type: 'destroy' }, now);
      await g.api.nodeEvent(n.id, { type: 'destroying' }, now);
      await g.api.nodeEvent(n.id, { type: 'destroyed' }, now);
    }
  }

  private poke(): void {
    this.wake.abort();
  }

  /**
   * The supervisor's events about a group go out through that group's actor, after the events of
   * the changes they follow (a node's FAULT before the blocked rule it causes): two ports would
   * deliver in no promised order. A group whose actor is away gets them directly.
   */
  private emit(events: EventBody[]): void {
    if (events.length === 0) return;
    const g = this.groups.get(events[0]!.group);
    if (!g || g.gone) {
      this.init.events.postMessage(events);
      return;
    }
    g.api.announce(events).catch(() => this.init.events.postMessage(events));
  }

  private async loop(): Promise<void> {
    while (this.running) {
      this.wake = new AbortController();
      const started = Date.now();
      let next = started + this.init.tickMs;
      for (const g of this.groups.all()) {
        if (g.gone) continue;
        try {
          next = Math.min(next, await this.superviseGroup(g, Date.now()));
        } catch (err) {
          // A crash of the group's actor is reported by the host (actor.crashed), not here.
          if (!g.gone) this.emit([{ type: 'platform.error', group: g.group.name, operation: 'supervise', message: (err as Error).message }]);
        }
      }
      this.lastTick = started;
      const wait = Math.max(20, next - Date.now());
      try {
        await sleep(wait, undefined, { signal: this.wake.signal });
      } catch {
        /* woken early */
      }
    }
  }

  /** Supervises one group; answers the earliest time a node of it could overstay its silence. */
  private async superviseGroup(g: Attached, now: number): Promise<number> {
    const platform = this.platforms.of(g.group);
    if (!g.reconciled) {
      if (now < g.reconcileAfter) return Infinity;
      try {
        await this.reconcile(g, platform, now);
        g.reconciled = true;
      } catch (err) {
        // Without knowing what the platform has, creating more could duplicate it: wait and retry.
        g.reconcileAfter = now + 30_000;
        this.emit([{ type: 'platform.error', group: g.group.name, operation: 'reconcile', message: `${(err as Error).message}; retrying in 30 s` }]);
        return Infinity;
      }
    }
    await g.api.tick(now);
    const requests = g.requests.splice(0);
    const evaluate = now - g.lastEvaluated >= g.group.timing.evaluationInterval;
    const planned = await g.api.plan({ now, busy: this.operations.busy, requests, lastScaled: g.lastScaled, requested: g.requested, evaluate, retiring: g.retiring }).catch((err: unknown) => {
      // The actor is restarting: the capacity asked for waits for the next plan, not for a lookup to ask again.
      g.requests.unshift(...requests);
      throw err;
    });
    if (evaluate) g.lastEvaluated = now;
    const { actions, nodes, destroying, deadline } = planned;
    if (g.retiring && nodes === 0) {
      this.groups.detach(g.group.name);
      this.emit([{ type: 'nodegroup.changed', group: g.group.name, change: 'drained' }]);
      return Infinity;
    }
    const blockedNow = new Set<string>();
    for (const action of actions) {
      if (action.type === 'blocked') {
        const key = `${ruleKey(action)}|${action.cause}`;
        blockedNow.add(key);
        if (!g.blocked.has(key)) this.emit([{ type: 'scaling.blocked', group: g.group.name, role: action.role, region: action.region, cause: action.cause, reason: action.reason }]);
        continue;
      }
      await this.act(g, platform, action, destroying, now);
    }
    g.blocked = blockedNow;
    return deadline;
  }

  /**
   * At start (and until it succeeds): what the platform has against what LMDB records. Nodes it
   * lists are recorded; nodes it lacks go FAULT (and are replaced), or finish their destruction;
   * nodes its owner removed retire; its orphans are destroyed.
   */
  private async reconcile(g: Attached, platform: Platform, now: number): Promise<void> {
    const nodes = await g.api.facts();
    const r = await platform.reconcile(g.group, nodes);
    if (r.listed.length > 0) await g.api.addNodes(r.listed, now);
    const missing = new Set(r.missing);
    const events = [];
    for (const n of nodes) {
      if (missing.has(n.id)) {
        if (n.state === 'DESTRUCTION_REQUESTED' || n.state === 'DESTROYING') {
          events.push({ id: n.id, event: { type: 'destroying' as const } }, { id: n.id, event: { type: 'destroyed' as const } });
        } else if (n.state !== 'FAULT') {
          events.push({ id: n.id, event: { type: 'fault' as const, reason: r.missingReason ?? 'the platform does not have it' } });
        }
      }
    }
    for (const id of r.retired) events.push({ id, event: { type: 'destroy' as const } });
    if (events.length > 0) await g.api.nodeEvents(events, now);
    for (const id of r.orphans) this.operations.removeOrphan(g.group.name, platform, id);
  }

  private async act(g: Attached, platform: Platform, action: Exclude<Action, { type: 'blocked' }>, nodes: readonly NodeFacts[], now: number): Promise<void> {
    switch (action.type) {
      case 'event':
        await g.api.nodeEvent(action.nodeId, action.event, now);
        return;
      case 'create': {
        const { role, region, count, trigger, reason, values } = action;
        this.emit([{ type: 'scaling.action', group: g.group.name, role, region, action: 'create', count, trigger, reason, ...(values ? { values } : {}) }]);
        if (trigger === 'scaleOut' || trigger === 'request') g.lastScaled.set(ruleKey(action), now);
        if (trigger === 'request') {
          // Kept long enough for any sensible cooldown: a day of them, at most 64 per rule.
          const kept = (g.requested.get(ruleKey(action)) ?? []).filter((r) => now - r.at < 86_400_000).slice(-63);
          g.requested.set(ruleKey(action), [...kept, { at: now, count }]);
        }
        for (let i = 0; i < count; i++) await this.operations.create(g, platform, role, region, now);
        return;
      }
      case 'drain': {
        const { role, region, trigger, reason, values, nodeId } = action;
        const result = await g.api.nodeEvent(nodeId, { type: 'drain' }, now);
        if (!result.ok) return;
        this.emit([{ type: 'scaling.action', group: g.group.name, role, region, action: 'drain', count: 1, trigger, reason, nodeId, ...(values ? { values } : {}) }]);
        if (trigger === 'scaleIn') g.lastScaled.set(ruleKey(action), now);
        return;
      }
      case 'destroy': {
        const node = nodes.find((n) => n.id === action.nodeId);
        if (node) this.operations.destroy(g, platform, node);
        return;
      }
    }
  }
}

export type SupervisorApi = Supervisor;

surviveCommitFailures((message) => console.error(message));
Comlink.expose(new Supervisor(), nodeEndpoint(parentPort!));
