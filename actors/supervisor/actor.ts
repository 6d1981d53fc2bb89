// Worker-thread entry of the supervisor actor: every tick it asks each node-group actor for its
// plan (./plan.ts, pure, run beside the group's nodes so that only actions cross the thread) and
// carries it out through the platform drivers: faults, drains, node creation to keep every rule
// at its min, destruction. The cooldowns, the platform operations under way and the capacity
// lookups asked for are the supervisor's, and go with each request for a plan.
import { randomBytes } from 'node:crypto';
import { parentPort, type MessagePort } from 'node:worker_threads';
import { setTimeout as sleep } from 'node:timers/promises';
import * as Comlink from 'comlink';
import type { NodeGroup } from '../../src/config/types.js';
import type { EventBody } from '../../src/domain/events.js';
import type { PlatformData } from '../../src/domain/records.js';
import type { NodeEvent } from '../../src/domain/states.js';
import type { Role } from '../../src/domain/vocabulary.js';
import { TokenSigner, type SigningKey } from '../../src/auth/tokens.js';
import { LocalPlatform } from '../../src/platforms/local.js';
import { StaticPlatform } from '../../src/platforms/static.js';
import type { Platform } from '../../src/platforms/platform.js';
import { TerraformPlatform } from '../../src/platforms/terraform/platform.js';
import type { RunnerProgress } from '../../src/platforms/terraform/runner.js';
import type { TerraformModules } from '../../src/platforms/terraform/policy.js';
import type { TerraformOperatorConfig } from '../../src/config/types.js';
import { nodeEndpoint } from '../comlink.js';
import { surviveCommitFailures } from '../../src/store/failures.js';
import type { GroupApi } from '../group/actor.js';
import type { NodeFacts } from '../group/model.js';
import { ruleKey, type Action, type CapacityRequest, type Requested } from './plan.js';

/** How long an operation waits for a crashed group actor's successor (its restart backs off to 5 s). */
const ACTOR_RETURN_MS = 15_000;

export interface SupervisorInit {
  dataDir: string;
  /** Where agents on this machine reach the service (the local platform's nodes). */
  serviceUrl: string;
  /** Where other machines reach it (`server.publicUrl`): Terraform-made nodes, unless their group says otherwise. */
  publicUrl?: string;
  /** Node tokens are signed here: the same key as the front end's. */
  jwtKey: SigningKey;
  nodeTokenTtl: number;
  tickMs: number;
  events: MessagePort;
  /** Agents of the local platform exit after this long without reaching the service. */
  orphanTimeoutMs?: number;
  /** The operator's Terraform CLI and environment, and the modules read at start: never a node group's. */
  terraform: { operator: Pick<TerraformOperatorConfig, 'binary' | 'env'>; modules: TerraformModules };
}

interface Attached {
  group: NodeGroup;
  api: Comlink.Remote<GroupApi>;
  port: MessagePort;
  requests: CapacityRequest[];
  blocked: Set<string>;
  reconciled: boolean;
  /** When each rule last scaled out or in (its cooldown runs from there). */
  lastScaled: Map<string, number>;
  /** The scale-outs failed lookups had per rule, newest last: their budget is per cooldown. */
  requested: Map<string, Requested[]>;
  /** When the rules' conditions were last evaluated. */
  lastEvaluated: number;
  /** Being deleted: retire every node, then report the group drained. */
  retiring: boolean;
  /** When to try reconciling with the platform again after a failure. */
  reconcileAfter: number;
  /** The group's actor thread died: skipped until the host attaches its successor. */
  gone: boolean;
}

/**
 * A comlink call over a port whose other end died never settles. Calls in flight are failed when
 * the port closes, so that a crashed group actor cannot wedge the loop that supervises every
 * group. (Not Promise.race with a promise of the close: that promise settles only on a crash, and
 * each race would leave on it a reaction holding the call's answer.)
 */
function guarded(port: MessagePort, onGone: () => void): Comlink.Remote<GroupApi> {
  const raw = Comlink.wrap<GroupApi>(nodeEndpoint(port));
  const inFlight = new Set<(err: Error) => void>();
  let gone = false;
  port.once('close', () => {
    gone = true;
    onGone();
    const err = new Error('the group actor went away');
    for (const fail of inFlight) fail(err);
    inFlight.clear();
  });
  const methods = new Map<PropertyKey, (...args: unknown[]) => Promise<unknown>>();
  return new Proxy({} as Comlink.Remote<GroupApi>, {
    get(_, name) {
      let fn = methods.get(name);
      if (!fn) {
        const remote = (raw as unknown as Record<PropertyKey, (...args: unknown[]) => Promise<unknown>>)[name]!;
        fn = (...args: unknown[]) =>
          new Promise((resolve, reject) => {
            if (gone) return reject(new Error('the group actor went away'));
            inFlight.add(reject);
            remote(...args).then(resolve, reject).finally(() => inFlight.delete(reject));
          });
        methods.set(name, fn);
      }
      return fn;
    },
  });
}

class Supervisor {
  private readonly groups = new Map<string, Attached>();
  /** Nodes with a platform operation under way. */
  private readonly busy = new Set<string>();
  private platforms!: { local: LocalPlatform; static: StaticPlatform };
  /** One Terraform working directory, and so one platform, per node group. */
  private readonly terraform = new Map<string, TerraformPlatform>();
  private signer!: TokenSigner;
  private init!: SupervisorInit;
  private running = false;
  private stopped: Promise<void> = Promise.resolve();
  private wake = new AbortController();
  private lastTick = 0;
  private readonly operations = new Set<Promise<unknown>>();
  /** Woken whenever a group actor is attached or detached. */
  private readonly attachWaiters = new Set<() => void>();

  start(init: SupervisorInit): void {
    this.init = init;
    this.signer = new TokenSigner(init.jwtKey);
    this.platforms = {
      local: new LocalPlatform({
        serviceUrl: init.serviceUrl,
        dataDir: init.dataDir,
        nodeToken: (group, nodeId) => this.signer.nodeToken(group, nodeId, init.nodeTokenTtl),
        ...(init.orphanTimeoutMs !== undefined ? { orphanTimeoutMs: init.orphanTimeoutMs } : {}),
      }),
      static: new StaticPlatform(),
    };
    this.running = true;
    this.stopped = this.loop();
  }

  attachGroup(group: NodeGroup, port: MessagePort, retiring = false): void {
    this.groups.get(group.name)?.port.close();
    const previous = this.groups.get(group.name);
    const attached: Attached = {
      group,
      api: guarded(port, () => (attached.gone = true)),
      port,
      requests: [],
      blocked: new Set(),
      reconciled: previous?.reconciled ?? false,
      lastScaled: previous?.lastScaled ?? new Map(),
      requested: previous?.requested ?? new Map(),
      lastEvaluated: previous?.lastEvaluated ?? 0,
      retiring: retiring || (previous?.retiring ?? false),
      reconcileAfter: 0,
      gone: false,
    };
    this.groups.set(group.name, attached);
    this.attachChanged();
    this.poke();
  }

  detachGroup(name: string): void {
    this.groups.get(name)?.port.close();
    this.groups.delete(name);
    this.attachChanged();
  }

  private attachChanged(): void {
    for (const wake of [...this.attachWaiters]) wake();
  }

  /** Settles at the next attach or detach, or after `ms`. */
  private nextAttach(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.attachWaiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.attachWaiters.add(done);
    });
  }

  /**
   * The current actor of a group: after a crash, its successor (which reloads the group's nodes
   * from LMDB) is waited for, so that what a platform operation finished is not lost with the
   * thread that asked for it. Undefined if the group is gone or did not come back in time.
   */
  private async current(name: string, waitMs: number): Promise<Attached | undefined> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const g = this.groups.get(name);
      if (!g) return undefined;
      if (!g.gone) return g;
      const left = deadline - Date.now();
      if (left <= 0) return undefined;
      await this.nextAttach(left);
    }
  }

  /** A node's event, to whichever actor of its group is current when it is sent. */
  private async nodeEvent(name: string, id: string, event: NodeEvent, patch?: { platform?: PlatformData }): Promise<void> {
    for (;;) {
      const g = await this.current(name, this.running ? ACTOR_RETURN_MS : 0);
      if (!g) throw new Error(`the actor of node group '${name}' did not come back; node ${id} missed '${event.type}'`);
      try {
        await g.api.nodeEvent(id, event, Date.now(), patch);
        return;
      } catch (err) {
        if (!g.gone) throw err;
      }
    }
  }

  reconfigure(group: NodeGroup): void {
    const g = this.groups.get(group.name);
    if (g) g.group = group;
    this.terraform.get(group.name)?.reconfigure(group);
  }

  private platformOf(g: Attached): Platform {
    const type = g.group.platform.type;
    if (type !== 'terraform') return this.platforms[type];
    let tp = this.terraform.get(g.group.name);
    if (!tp) {
      tp = new TerraformPlatform({
        dataDir: this.init.dataDir,
        group: g.group,
        serviceUrl: this.init.publicUrl ?? this.init.serviceUrl,
        operator: this.init.terraform.operator,
        modules: this.init.terraform.modules,
        nodeToken: (group, nodeId) => this.signer.nodeToken(group, nodeId, this.init.nodeTokenTtl),
        onProgress: (group, event) => this.emit([terraformEvent(group, event)]),
      });
      this.terraform.set(g.group.name, tp);
    }
    return tp;
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
    return { running: this.running, lastTick: this.lastTick, busy: this.busy.size, groups: [...this.groups.keys()] };
  }

  /** Stops the loop; with `stopNodes`, stops every local node and forgets it (clean shutdown). */
  async stop(stopNodes: boolean): Promise<void> {
    this.running = false;
    this.poke();
    await this.stopped;
    await Promise.allSettled([...this.operations]);
    await Promise.allSettled([...this.terraform.values()].map((tp) => tp.shutdown()));
    if (!stopNodes) return;
    for (const name of [...this.groups.keys()]) {
      try {
        await this.stopLocalNodes(name);
      } catch (err) {
        // Agents left running give up on their own after orphanTimeout; the next start adopts or replaces them.
        this.emit([{ type: 'platform.error', group: name, operation: 'destroy', message: `local nodes left running: ${(err as Error).message}` }]);
      }
    }
  }

  private async stopLocalNodes(name: string): Promise<void> {
    // A group whose thread is restarting is waited for: only its actor knows its nodes' processes.
    const g = await this.current(name, ACTOR_RETURN_MS);
    if (!g) throw new Error(`the actor of node group '${name}' did not come back`);
    const local = (await g.api.facts()).filter((n) => n.platform.type === 'local');
    await this.platforms.local.shutdown(local);
    const now = Date.now();
    for (const n of local) {
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
      for (const g of [...this.groups.values()]) {
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
    if (!g.reconciled) {
      if (now < g.reconcileAfter) return Infinity;
      try {
        await this.reconcile(g, now);
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
    let planned;
    try {
      planned = await g.api.plan({ now, busy: this.busy, requests, lastScaled: g.lastScaled, requested: g.requested, evaluate, retiring: g.retiring });
    } catch (err) {
      // The actor is restarting: the capacity asked for waits for the next plan, not for a lookup to ask again.
      g.requests.unshift(...requests);
      throw err;
    }
    if (evaluate) g.lastEvaluated = now;
    const { actions, nodes, destroying, deadline } = planned;
    if (g.retiring && nodes === 0) {
      this.detachGroup(g.group.name);
      this.emit([{ type: 'nodegroup.changed', group: g.group.name, change: 'drained' }]);
      return Infinity;
    }
    const blockedNow = new Set<string>();
    for (const action of actions) {
      if (action.type === 'blocked') {
        const key = `${action.region}|${action.role}|${action.cause}`;
        blockedNow.add(key);
        if (!g.blocked.has(key)) this.emit([{ type: 'scaling.blocked', group: g.group.name, role: action.role, region: action.region, cause: action.cause, reason: action.reason }]);
        continue;
      }
      await this.act(g, action, destroying, now);
    }
    g.blocked = blockedNow;
    return deadline;
  }

  /** At start: adopt nodes whose platform still has them, fault the others; list static nodes. */
  private async reconcile(g: Attached, now: number): Promise<void> {
    const nodes = await g.api.facts();
    const known = new Set(nodes.map((n) => n.id));
    if (g.group.platform.type === 'static') {
      const specs = g.group.platform.static.nodes
        .filter((n) => !known.has(n.id))
        .map((n) => ({ id: n.id, role: n.role, region: n.region, platform: { type: 'static' as const, address: n.address }, state: 'CREATED' as const }));
      if (specs.length > 0) await g.api.addNodes(specs, now);
      const listed = new Set(g.group.platform.static.nodes.map((n) => n.id));
      for (const n of nodes) if (!listed.has(n.id)) await g.api.nodeEvent(n.id, { type: 'destroy' }, now);
      return;
    }
    const platform = this.platformOf(g);
    if (platform instanceof TerraformPlatform) {
      const { missing, orphans } = await platform.reconcile(nodes);
      const gone = new Set(missing);
      for (const n of nodes) {
        if (!gone.has(n.id)) continue;
        if (n.state === 'DESTRUCTION_REQUESTED' || n.state === 'DESTROYING') {
          await g.api.nodeEvent(n.id, { type: 'destroying' }, now);
          await g.api.nodeEvent(n.id, { type: 'destroyed' }, now);
        } else if (n.state !== 'FAULT') {
          await g.api.nodeEvent(n.id, { type: 'fault', reason: 'its resources are not in the Terraform state' }, now);
        }
      }
      for (const id of orphans) {
        this.emit([{ type: 'platform.error', group: g.group.name, nodeId: id, operation: 'reconcile', message: 'resources of an unknown node in the Terraform state: destroying them' }]);
        this.track(g.group.name, id, platform.runner.remove(id).catch((err: Error) => this.emit([{ type: 'platform.error', group: g.group.name, nodeId: id, operation: 'destroy', message: err.message }])));
      }
      return;
    }
    const gone = nodes.filter((n) => !(platform.exists(n) || n.state === 'FAULT' || n.state === 'DESTROYING' || n.state === 'DESTRUCTION_REQUESTED'));
    if (gone.length > 0) await g.api.nodeEvents(gone.map((n) => ({ id: n.id, event: { type: 'fault' as const, reason: `its ${n.platform.type} node is gone` } })), now);
  }

  private async act(g: Attached, action: Exclude<Action, { type: 'blocked' }>, nodes: readonly NodeFacts[], now: number): Promise<void> {
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
        for (let i = 0; i < count; i++) await this.create(g, role, region, now);
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
        if (node) this.track(g.group.name, node.id, this.destroy(g, node));
        return;
      }
    }
  }

  private newId(role: Role, region: string): string {
    return `${region}-${role}-${randomBytes(3).toString('hex')}`.slice(-32);
  }

  private async create(g: Attached, role: Role, region: string, now: number): Promise<void> {
    const platform = this.platformOf(g);
    const id = this.newId(role, region);
    const data = platform.prepare(g.group, { id, role, region });
    if (!(await g.api.addNodes([{ id, role, region, platform: data }], now))) return;
    const name = g.group.name;
    this.track(
      name,
      id,
      (async () => {
        await this.nodeEvent(name, id, { type: 'provision' });
        let created: PlatformData;
        try {
          created = await platform.create(g.group, { id, role, region, platform: data });
        } catch (err) {
          this.emit([{ type: 'platform.error', group: name, nodeId: id, operation: 'create', message: (err as Error).message }]);
          await this.nodeEvent(name, id, { type: 'fault', reason: `create failed: ${(err as Error).message}` });
          return;
        }
        await this.nodeEvent(name, id, { type: 'created' }, { platform: created });
      })(),
    );
  }

  private async destroy(g: Attached, node: NodeFacts): Promise<void> {
    const platform = this.platformOf(g);
    const name = g.group.name;
    await this.nodeEvent(name, node.id, { type: 'destroying' });
    try {
      await platform.destroy(node);
    } catch (err) {
      this.emit([{ type: 'platform.error', group: name, nodeId: node.id, operation: 'destroy', message: (err as Error).message }]);
      return;
    }
    await this.nodeEvent(name, node.id, { type: 'destroyed' });
  }

  /** A platform operation under way; what it fails with is an event, never the end of this thread. */
  private track(group: string, id: string, op: Promise<void>): void {
    this.busy.add(id);
    const tracked = op.catch((err: Error) => this.emit([{ type: 'platform.error', group, nodeId: id, operation: 'supervise', message: err.message }])).finally(() => {
      this.busy.delete(id);
      this.operations.delete(tracked);
      this.poke();
    });
    this.operations.add(tracked);
  }
}

function terraformEvent(group: string, e: RunnerProgress): EventBody {
  const base = { type: 'platform.progress' as const, group, platform: 'terraform' as const, operation: e.operation, phase: e.phase };
  if ('diagnostic' in e) return { ...base, message: `${e.diagnostic.severity}: ${e.diagnostic.summary}${e.diagnostic.detail ? `: ${e.diagnostic.detail}` : ''}`, ...(e.diagnostic.nodeId ? { nodeId: e.diagnostic.nodeId } : {}) };
  if ('resource' in e) return { ...base, resource: e.resource, action: e.action, ...(e.nodeId ? { nodeId: e.nodeId } : {}) };
  if (e.phase === 'summary' && 'add' in e) return { ...base, message: `${e.add} added, ${e.change} changed, ${e.remove} destroyed` };
  return { ...base, ...('attempt' in e && e.attempt !== undefined ? { attempt: e.attempt } : {}), ...('message' in e && e.message ? { message: e.message } : {}), ...('ok' in e && e.ok !== undefined ? { message: e.ok ? 'ok' : (e.message ?? 'failed') } : {}) };
}

export type SupervisorApi = Supervisor;

surviveCommitFailures((message) => console.error(message));
Comlink.expose(new Supervisor(), nodeEndpoint(parentPort!));
