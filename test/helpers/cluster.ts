// Several Switchyard instances as child processes on one NATS cluster, for the cluster tests and
// benches (docs/cluster.md): each with its own data directory and port, the same config file and
// the same NATS URLs. Stopped by pid at teardown; a failed test logs each one's last lines.
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import { launchService, type LaunchedService } from './process.js';
import { request } from './http.js';
import { killAgentsOf, tempDir } from './service.js';
import { NatsCluster } from './nats-cluster.js';
import { localGroup } from './fixtures.js';
import { until } from './until.js';
import { rank } from '../../src/policy/cluster/hrw.js';

export const CLUSTER_PASSWORD = 'cluster-admin-password';

/**
 * A local group of a cluster test, its agents on 127.0.`net`.x, with room to spare on each node:
 * the tests' load binds thousands of streams that never publish, and each holds its origin's room
 * until publishTimeout (docs/choosing-nodes.md, Load).
 */
export function clusterGroup(name: string, net: number, origins = 2, edges = 1) {
  return localGroup({
    name,
    firstAddress: `127.0.${net}.2`,
    origins: { min: origins, max: origins + 1, limit: 1_000_000 },
    edges: { min: edges, max: edges + 1, limit: 1_000_000 },
    timing: { heartbeatMs: 300, nodeTimeout: '5s' },
  });
}

export function clusterConfig(groups: unknown[] = [clusterGroup('g', 30), clusterGroup('h', 31)], leaseTtl = '3s') {
  return {
    server: { host: '127.0.0.1', port: 0 },
    supervisorTick: '200ms',
    geoip: { enabled: false },
    log: { level: 'info' },
    // The NATS URLs come from SWITCHYARD_NATS_URL (Cluster.spawn).
    cluster: { nats: ['nats://127.0.0.1:4222'], leaseTtl },
    nodeGroups: groups,
  };
}

/** A group whose PENDING bindings (nobody publishes to simulated nodes) stay for the whole test. */
export function slowBindings(group: ReturnType<typeof clusterGroup>) {
  return { ...group, timing: { ...group.timing, publishTimeout: '10m', streamTimeout: '10m' } };
}

/** A metric's value as an instance exposes it (`labels` as written in the exposition, e.g. `kind="lookups",direction="received"`); NaN when absent. */
export async function metricOf(i: Instance, name: string, labels = ''): Promise<number> {
  const text = (await request(i.url, 'GET', '/as/v1/metrics')).text;
  const escaped = labels.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return Number(new RegExp(`^${name}${labels ? `\\{${escaped}\\}` : ''} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
}

export interface Instance {
  id: string;
  dataDir: string;
  port: number;
  launched: LaunchedService | null;
  url: string;
}

export class Cluster {
  readonly dir = tempDir('switchyard-cluster-');
  readonly instances: Instance[] = [];
  private readonly configFile: string;

  private constructor(
    readonly nats: NatsCluster,
    config: object,
    private readonly extraEnv: Record<string, string>,
  ) {
    this.configFile = join(this.dir, 'config.json');
    writeFileSync(this.configFile, JSON.stringify(config));
  }

  /** A NATS cluster of `servers` and `instances` Switchyard instances on it, all started and ready. */
  static async start(t: ExecutionContext, config: object, options: { servers?: number; instances?: number; env?: Record<string, string>; nats?: NatsCluster } = {}): Promise<Cluster> {
    const nats = options.nats ?? (await NatsCluster.start(options.servers ?? 3));
    const c = new Cluster(nats, config, options.env ?? {});
    t.teardown(async () => {
      for (const i of c.instances) if (i.launched && i.launched.proc.exitCode === null) i.launched.proc.kill('SIGKILL');
      for (const i of c.instances) killAgentsOf(i.dataDir);
      if (!t.passed) c.report(t);
      await nats.stop();
      rmSync(c.dir, { recursive: true, force: true });
    });
    for (let n = 0; n < (options.instances ?? 3); n++) c.add();
    await Promise.all(c.instances.map((i) => c.spawn(i)));
    return c;
  }

  /** Another instance (not started). */
  add(): Instance {
    const id = `i${this.instances.length + 1}`;
    const inst: Instance = { id, dataDir: join(this.dir, id), port: 0, launched: null, url: '' };
    this.instances.push(inst);
    return inst;
  }

  /** Starts (or starts again) an instance and waits until it listens. */
  async spawn(i: Instance, timeoutMs = 60_000): Promise<void> {
    const env = {
      SWITCHYARD_CONFIG: this.configFile,
      SWITCHYARD_DATA_DIR: i.dataDir,
      SWITCHYARD_ADMIN_PASSWORD: CLUSTER_PASSWORD,
      SWITCHYARD_NATS_URL: this.nats.urls().join(','),
      SWITCHYARD_INSTANCE_ID: i.id,
      // The same port again after a restart: node agents and clients know it.
      SWITCHYARD_PORT: String(i.port),
      ...this.extraEnv,
    };
    i.launched = launchService(env, 300);
    const timer = setTimeout(() => i.launched?.proc.kill('SIGKILL'), timeoutMs);
    try {
      i.url = await i.launched.url;
      i.port = Number(new URL(i.url).port);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Stops an instance with a signal and waits for it to exit. */
  async kill(i: Instance, signal: NodeJS.Signals = 'SIGKILL'): Promise<number | null> {
    const l = i.launched;
    if (!l || l.proc.exitCode !== null) return l?.proc.exitCode ?? null;
    l.proc.kill(signal);
    return l.exited;
  }

  /** Waits until every group of `groups` is owned by some instance, as every running instance's /readyz says. */
  async ready(ms = 30_000): Promise<void> {
    await until(async () => (await Promise.all(this.running().map(async (i) => (await request(i.url, 'GET', '/as/v1/readyz')).status === 200))).every(Boolean), ms, 'every instance ready');
  }

  /**
   * Waits until each group is owned by the instance that ranks first for it among the running ones,
   * as every running instance says. An instance slow to start can see another take its group
   * first (after the grace), and the owner then hands it over calmly, 10 × TTL later: a test that
   * asserts that nothing moves must start from there.
   */
  async settled(groups: readonly string[], ms = 120_000): Promise<void> {
    const ids = this.running().map((i) => i.id);
    await until(
      async () => {
        for (const i of this.running()) {
          const owners = ((await request(i.url, 'GET', '/as/v1/readyz')).json as { owners?: Record<string, string | null> } | undefined)?.owners;
          if (!groups.every((g) => owners?.[g] === rank(g, ids)[0])) return false;
        }
        return true;
      },
      ms,
      `each of ${groups.join(', ')} owned by the instance ranked first for it`,
    );
  }

  running(): Instance[] {
    return this.instances.filter((i) => i.launched && i.launched.proc.exitCode === null && i.launched.proc.signalCode === null);
  }

  async login(i: Instance): Promise<string> {
    const r = await request(i.url, 'POST', '/as/v1/auth/login', { username: 'admin', password: CLUSTER_PASSWORD });
    if (r.status !== 200) throw new Error(`login on ${i.id}: ${r.status} ${r.text}`);
    return (r.json as { accessToken: string }).accessToken;
  }

  /** Which instance owns a group, as the instance asked says (the x-switchyard-owner of a lookup, or its readyz). */
  async ownerOf(group: string, via: Instance = this.running()[0]!): Promise<string | null> {
    const r = await request(via.url, 'GET', '/as/v1/readyz');
    const owners = (r.json as { owners?: Record<string, string | null> } | undefined)?.owners;
    return owners?.[group] ?? null;
  }

  byId(id: string): Instance {
    return this.instances.find((i) => i.id === id)!;
  }

  report(t: { log(...v: unknown[]): void }): void {
    for (const i of this.instances) t.log(`${i.id} (last 40 lines):\n${i.launched?.output.slice(-40).join('\n')}`);
    for (const s of this.nats.servers) t.log(`nats ${s.name}:\n${s.output.slice(-10).join('\n')}`);
    for (const i of this.instances) {
      try {
        for (const id of readdirSync(join(i.dataDir, 'nodes')))
          t.log(
            `agent ${id}:\n${readFileSync(join(i.dataDir, 'nodes', id, 'agent.log'), 'utf8')
              .split('\n')
              .slice(-5)
              .join('\n')}`,
          );
      } catch {
        /* no agents */
      }
    }
  }
}
