// The soak's churn, beside the load until the run ends: agents silenced until their node is FAULT
// and let back until it is INSERVICE; provisions created every few seconds and the oldest deleted;
// a node group created through the API, used, one node drained, one doomed, and deleted, once a
// minute. Each loop keeps its schedule from the soak's start; a cycle that fails is counted, as an
// unexpected status, and the loop goes on.
import { setTimeout as sleep } from 'node:timers/promises';
import { allReach, isNodeState, type Follower } from './events.js';
import type { Fleet, LiveStreams, NodeSpec } from './fleet.js';
import { nodeIdOf, type Admin } from './soak-admin.js';
import { GROUP, groupSpec, NODE_TIMEOUT_MS, REGIONS } from './soak-group.js';
import type { Statuses } from './statuses.js';

/** What the churn did, for the report and the result. */
export interface ChurnCounts {
  nodeCycles: number;
  /** From an agent's silence to its node's FAULT, and from its return to INSERVICE. */
  faultMs: number[];
  backMs: number[];
  groupCycles: number;
  groupCycleMs: number[];
  provisions: number;
  failures: string[];
}

export interface ChurnOptions {
  fleet: Fleet;
  live: LiveStreams;
  admin: Admin;
  events: Follower;
  statuses: Statuses;
  /** Makes this run's provision names unique. */
  runId: string;
  /** The soak load's start and end (ms since the epoch). */
  start: number;
  end: number;
  /** Aborted when the run is over (or interrupted). */
  signal: AbortSignal;
}

export class Churn {
  readonly counts: ChurnCounts = { nodeCycles: 0, faultMs: [], backMs: [], groupCycles: 0, groupCycleMs: [], provisions: 0, failures: [] };

  constructor(private readonly o: ChurnOptions) {}

  /** The three loops; they end soon after `signal` aborts. */
  run(): Array<Promise<void>> {
    return [this.nodeChurn(), this.provisionChurn(), this.groupChurn()];
  }

  private failed(what: string, err: unknown): void {
    this.counts.failures.push(`${what}: ${(err as Error).message}`);
    this.o.statuses.record('churn', 'failed', 'unexpected', what, (err as Error).message);
  }

  /** Waits until `at` (a schedule, not a synchronisation); false when the run is over. */
  private async until(at: number): Promise<boolean> {
    try {
      await sleep(Math.max(0, at - Date.now()), undefined, { signal: this.o.signal });
    } catch {
      return false;
    }
    return !this.o.signal.aborted;
  }

  /** An agent goes silent until its node is FAULT, then comes back until it is INSERVICE again. */
  private async nodeChurn(): Promise<void> {
    const { fleet, live, events, start, end } = this.o;
    const period = Math.min(20_000, (end - start) / 4);
    for (let k = 0; ; k++) {
      if (!(await this.until(start + (k + 0.5) * period)) || Date.now() + 20_000 > end) return;
      const role = k % 2 === 0 ? 'edge' : 'origin';
      const candidates = fleet.ids((n) => n.group === GROUP && n.role === role);
      const victim = candidates[Math.floor(Math.random() * candidates.length)]!;
      try {
        const fault = events.next((e) => isNodeState(e, GROUP, 'FAULT') && (e as { nodeId: string }).nodeId === victim, NODE_TIMEOUT_MS + 10_000, `${victim} to go FAULT`);
        const silentAt = Date.now();
        fleet.silence(victim);
        if (role === 'origin') live.originDown(victim);
        try {
          this.counts.faultMs.push((await fault).at - silentAt);
        } finally {
          const back = events.next((e) => isNodeState(e, GROUP, 'INSERVICE') && (e as { nodeId: string }).nodeId === victim, 10_000, `${victim} back in service`);
          const resumedAt = Date.now();
          const status = await fleet.resume(victim);
          if (role === 'origin' && status === 200) live.originUp(victim, Date.now());
          this.counts.backMs.push((await back).at - resumedAt);
        }
        this.counts.nodeCycles++;
      } catch (err) {
        this.failed(`silencing ${victim}`, err);
      }
    }
  }

  /** Provisions created every few seconds, the oldest deleted; the admin's lists read meanwhile. */
  private async provisionChurn(): Promise<void> {
    const { admin, runId, start, end } = this.o;
    const kept: string[] = [];
    for (let k = 0; ; k++) {
      if (!(await this.until(start + k * 3000)) || Date.now() + 3000 > end) break;
      const name = `prov-${runId}-${k}`;
      const rendition = (suffix: string, level: number, br: number, w: number, h: number) => ({
        name: `${name}_${suffix}`,
        level,
        videoBR: br,
        videoWidth: w,
        videoHeight: h,
        videoFPS: 30,
        audioBR: 128_000,
      });
      const r = await admin.call('provision create', 'POST', `/as/v1/provision/${GROUP}`, [201], {
        streamName: name,
        region: 'r1',
        streams: [rendition('hi', 1, 2_500_000, 1280, 720), rendition('lo', 2, 800_000, 640, 360)],
      });
      if (r.status === 201) kept.push(name);
      this.counts.provisions++;
      if (kept.length > 4) await admin.call('provision delete', 'DELETE', `/as/v1/provision/${GROUP}/${kept.shift()}`, [204]);
      await admin.call('provision list', 'GET', `/as/v1/provision/${GROUP}?limit=10`, [200]);
      await admin.call('node groups', 'GET', '/as/v1/nodegroups', [200]);
    }
    for (const name of kept) await admin.call('provision delete', 'DELETE', `/as/v1/provision/${GROUP}/${name}`, [204]);
  }

  /** A node group created through the API, used, one edge drained, one doomed, then deleted. */
  private async groupCycle(k: number): Promise<void> {
    const { fleet, admin, events } = this.o;
    const call = admin.call;
    const name = `churn${k}`;
    const nodes: NodeSpec[] = [
      { id: `${name}-o0`, role: 'origin', region: 'r1' },
      { id: `${name}-e0`, role: 'edge', region: 'r1' },
      { id: `${name}-e1`, role: 'edge', region: 'r1' },
    ];
    const ids = nodes.map((n) => n.id);
    const started = Date.now();
    const registered = allReach(events, name, ids, 'CREATED', 15_000);
    const created = await call('node group create', 'POST', '/as/v1/nodegroups', [201], groupSpec(name, nodes, REGIONS.slice(0, 1), 100 + (k % 100)));
    if (created.status !== 201) {
      registered.catch(() => {});
      throw new Error(`could not create ${name}`);
    }
    try {
      await registered;
      const up = allReach(events, name, ids, 'INSERVICE', 10_000);
      fleet.add(name, nodes);
      await up;
      const stream = `${name}-live`;
      const pub = await call('lookup (churn group)', 'GET', `/as/v1/streams/live/${stream}/publish?nodeGroup=${name}`, [200]);
      if (pub.status === 200) fleet.publish(nodeIdOf(pub.text)!, stream);
      for (let i = 0; i < 10; i++) await call('lookup (churn group)', 'GET', `/as/v1/streams/live/${name}-new${i}/publish?nodeGroup=${name}`, [200]);
      for (let i = 0; i < 10; i++) {
        const sub = await call('lookup (churn group)', 'GET', `/as/v1/streams/live/${stream}/subscribe?nodeGroup=${name}`, [200]);
        if (sub.status === 200) fleet.viewed(nodeIdOf(sub.text)!, stream);
      }
      await call('node group detail', 'GET', `/as/v1/nodegroups/${name}`, [200]);
      fleet.unpublish(nodes[0]!.id, stream);
      // Drained: retired once its viewers have left (their last report ages out).
      const gone = allReach(events, name, [nodes[1]!.id], null, 30_000);
      fleet.retire(nodes[1]!.id);
      await call('node drain', 'POST', `/as/v1/nodegroups/${name}/nodes/${nodes[1]!.id}/drain`, [202]);
      await gone;
      fleet.retire(nodes[2]!.id);
      await call('node doom', 'POST', `/as/v1/nodegroups/${name}/nodes/${nodes[2]!.id}/doom`, [202]);
    } finally {
      const deleted = events.next((e) => e.type === 'nodegroup.changed' && e.group === name && e.change === 'deleted', 60_000, `${name} to be deleted`);
      for (const id of ids) fleet.retire(id);
      const del = await call('node group delete', 'DELETE', `/as/v1/nodegroups/${name}`, [202]);
      if (del.status === 202) await deleted;
      else deleted.catch(() => {});
      fleet.remove(ids);
    }
    this.counts.groupCycleMs.push(Date.now() - started);
    this.counts.groupCycles++;
  }

  private async groupChurn(): Promise<void> {
    const { start, end } = this.o;
    const period = Math.min(60_000, (end - start) / 2);
    for (let k = 0; ; k++) {
      if (!(await this.until(start + (k + 0.25) * period)) || Date.now() + 45_000 > end) return;
      try {
        await this.groupCycle(k);
      } catch (err) {
        this.failed(`node group churn${k}`, err);
      }
    }
  }
}
