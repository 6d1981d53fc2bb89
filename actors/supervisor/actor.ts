// Worker-thread entry of the supervisor actor: the actuator. Every tick it asks each node-group
// actor for its plan (src/policy/scaling, pure, made beside the group's nodes by the group's
// planner, which remembers cooldowns and the capacity lookups asked for: src/model/planner.ts) and
// carries it out through the group's platform: faults, drains, creations, destructions; each
// scaling action carried out is reported back to the planner (after the Kubernetes
// cluster-autoscaler: planning apart from actuation, the actuator reporting its outcome). The
// platform operations under way are the actuator's own, and go with each request for a plan.
import { parentPort, type MessagePort } from 'node:worker_threads';
import { setTimeout as sleep } from 'node:timers/promises';
import * as Comlink from 'comlink';
import type { NodeGroup } from '../../src/config/types.js';
import type { EventBatch, EventBody } from '../../src/domain/events.js';
import { TokenSigner, type SigningKey } from '../../src/auth/tokens.js';
import type { Platform } from '../../src/platforms/platform.js';
import type { NodeFacts } from '../../src/policy/scaling/facts.js';
import type { ActuatorAction } from '../../src/policy/scaling/plan.js';
import { surviveCommitFailures } from '../../src/store/failures.js';
import { nodeEndpoint } from '../comlink.js';
import { Directory, type Attached } from './directory.js';
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

  attachGroup(group: NodeGroup, port: MessagePort, retiring = false): void {
    this.watchCapacity(this.groups.attach(group, port, retiring));
    this.poke();
  }

  /**
   * Keeps one call open to the group's actor that settles when lookups found no room: the plan
   * then starts at once, not a tick later. Only the wake crosses the thread; what was asked for
   * stays with the group's planner. Ends when the actor goes (its successor gets a new one).
   */
  private watchCapacity(attached: Attached): void {
    void (async () => {
      while (this.running && !attached.gone && this.groups.get(attached.group.name) === attached) {
        await attached.api.capacityWanted();
        this.poke();
      }
    })().catch(() => {});
  }

  detachGroup(name: string): void {
    this.groups.detach(name);
    // Cluster mode: gone to another instance (or deleted): its Terraform runner goes too.
    if (this.init.terraform.backend) this.platforms.release(name);
  }

  reconfigure(group: NodeGroup): void {
    const attached = this.groups.get(group.name);
    if (attached) attached.group = group;
    this.platforms.reconfigure(group);
  }

  /** Starts retiring a group's nodes; the group is reported `drained` when none are left. */
  retireGroup(name: string): void {
    const attached = this.groups.get(name);
    if (!attached) return;
    attached.retiring = true;
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
    const attached = await this.groups.current(name, ACTOR_RETURN_MS);
    if (!attached) throw new Error(`the actor of node group '${name}' did not come back`);
    const platform = this.platforms.of(attached.group);
    if (!platform.capabilities.stopsWithService) return;
    const nodes = await attached.api.facts();
    await platform.shutdown(nodes);
    const now = Date.now();
    for (const n of nodes) {
      await attached.api.nodeEvent(n.id, { type: 'destroy' }, now);
      await attached.api.nodeEvent(n.id, { type: 'destroying' }, now);
      await attached.api.nodeEvent(n.id, { type: 'destroyed' }, now);
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
    const attached = this.groups.get(events[0]!.group);
    if (!attached || attached.gone) {
      this.init.events.postMessage({ events } satisfies EventBatch);
      return;
    }
    attached.api.announce(events).catch(() => this.init.events.postMessage({ events } satisfies EventBatch));
  }

  private async loop(): Promise<void> {
    while (this.running) {
      this.wake = new AbortController();
      const started = Date.now();
      let next = started + this.init.tickMs;
      for (const attached of this.groups.all()) {
        if (attached.gone) continue;
        try {
          next = Math.min(next, await this.superviseGroup(attached, Date.now()));
        } catch (err) {
          // A crash of the group's actor is reported by the host (actor.crashed), not here.
          if (!attached.gone) this.emit([{ type: 'platform.error', group: attached.group.name, operation: 'supervise', message: (err as Error).message }]);
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
  private async superviseGroup(attached: Attached, now: number): Promise<number> {
    const platform = this.platforms.of(attached.group);
    if (!attached.reconciled) {
      if (now < attached.reconcileAfter) return Infinity;
      try {
        await this.reconcile(attached, platform, now);
        attached.reconciled = true;
      } catch (err) {
        // Without knowing what the platform has, creating more could duplicate it: wait and retry.
        attached.reconcileAfter = now + 30_000;
        this.emit([{ type: 'platform.error', group: attached.group.name, operation: 'reconcile', message: `${(err as Error).message}; retrying in 30 s` }]);
        return Infinity;
      }
    }
    const { actions, nodes, destroying, deadline } = await attached.api.plan({ now, busy: this.operations.busy, retiring: attached.retiring });
    if (attached.retiring && nodes === 0) {
      this.groups.detach(attached.group.name);
      this.emit([{ type: 'nodegroup.changed', group: attached.group.name, change: 'drained' }]);
      return Infinity;
    }
    // Blocked rules are not among them (GroupPlan's type): the planner tells those (src/model/planner.ts).
    for (const action of actions) await this.act(attached, platform, action, destroying, now);
    return deadline;
  }

  /**
   * At start (and until it succeeds): what the platform has against what LMDB records. Nodes it
   * lists are recorded; nodes it lacks go FAULT (and are replaced), or finish their destruction;
   * nodes its owner removed retire; its orphans are destroyed.
   */
  private async reconcile(attached: Attached, platform: Platform, now: number): Promise<void> {
    const nodes = await attached.api.facts();
    const found = await platform.reconcile(attached.group, nodes);
    if (found.listed.length > 0) await attached.api.addNodes(found.listed, now);
    const missing = new Set(found.missing);
    const events = [];
    for (const n of nodes) {
      if (missing.has(n.id)) {
        if (n.state === 'DESTRUCTION_REQUESTED' || n.state === 'DESTROYING') {
          events.push({ id: n.id, event: { type: 'destroying' as const } }, { id: n.id, event: { type: 'destroyed' as const } });
        } else if (n.state !== 'FAULT') {
          events.push({ id: n.id, event: { type: 'fault' as const, reason: found.missingReason ?? 'the platform does not have it' } });
        }
      }
    }
    for (const id of found.retired) events.push({ id, event: { type: 'destroy' as const } });
    if (events.length > 0) await attached.api.nodeEvents(events, now);
    for (const id of found.orphans) this.operations.removeOrphan(attached.group.name, platform, id);
  }

  private async act(attached: Attached, platform: Platform, action: ActuatorAction, nodes: readonly NodeFacts[], now: number): Promise<void> {
    switch (action.type) {
      case 'event':
        await attached.api.nodeEvent(action.nodeId, action.event, now);
        return;
      case 'create': {
        // Reported before the creations start: their cooldown runs from the decision, and the
        // scaling.action event comes before the events of the nodes it makes.
        await attached.api.actuated(action, now);
        for (let i = 0; i < action.count; i++) await this.operations.create(attached, platform, action.role, action.region, now);
        return;
      }
      case 'drain': {
        const result = await attached.api.nodeEvent(action.nodeId, { type: 'drain' }, now);
        if (result.ok) await attached.api.actuated(action, now);
        return;
      }
      case 'destroy': {
        const node = nodes.find((n) => n.id === action.nodeId);
        if (node) this.operations.destroy(attached, platform, node);
        return;
      }
    }
  }
}

export type SupervisorApi = Supervisor;

surviveCommitFailures((message) => console.error(message));
Comlink.expose(new Supervisor(), nodeEndpoint(parentPort!));
