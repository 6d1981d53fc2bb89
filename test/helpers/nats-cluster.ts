// A real nats-server cluster on loopback for tests and benches (docs/cluster.md): N servers with
// free ports, their own store directories and generated configs, routes between them. Started
// servers are awaited until JetStream has a meta leader (read on the monitoring port); every
// process is stopped by its pid.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findProgram } from '../../src/os/programs.js';
import { tempDir } from './fixtures.js';
import { freePort } from './ports.js';
import { until } from './until.js';

export function natsServerBinary(): string | null {
  return findProgram('nats-server');
}

export interface NatsServer {
  name: string;
  port: number;
  clusterPort: number;
  monitorPort: number;
  storeDir: string;
  configFile: string;
  proc: ChildProcess | null;
  output: string[];
}

class ClusterDidNotForm extends Error {}

export class NatsCluster {
  readonly dir = tempDir('switchyard-nats-');
  readonly servers: NatsServer[] = [];

  /**
   * A started cluster. A start that elects no meta leader (a port taken between choosing and
   * binding it: a server then cannot listen) is stopped and made again on other ports, once.
   */
  static async start(size = 3): Promise<NatsCluster> {
    try {
      return await NatsCluster.startOnce(size);
    } catch (err) {
      if (!(err instanceof ClusterDidNotForm)) throw err;
      return await NatsCluster.startOnce(size);
    }
  }

  private static async startOnce(size: number): Promise<NatsCluster> {
    const binary = natsServerBinary();
    if (!binary) throw new Error('nats-server is not installed (npm run setup:media installs it)');
    const c = new NatsCluster();
    // Distinct ports: a port freed after one probe can be handed out again by the next.
    const taken = new Set<number>();
    const port = async () => {
      for (;;) {
        const p = await freePort();
        if (taken.has(p)) continue;
        taken.add(p);
        return p;
      }
    };
    for (let i = 1; i <= size; i++) {
      const storeDir = join(c.dir, `n${i}`);
      mkdirSync(storeDir, { recursive: true });
      c.servers.push({ name: `n${i}`, port: await port(), clusterPort: await port(), monitorPort: await port(), storeDir, configFile: join(c.dir, `n${i}.conf`), proc: null, output: [] });
    }
    for (const s of c.servers) {
      const routes = c.servers.filter((o) => o !== s).map((o) => `"nats-route://127.0.0.1:${o.clusterPort}"`);
      const cluster = size > 1 ? `cluster {\n  name: "switchyard"\n  listen: "127.0.0.1:${s.clusterPort}"\n  routes: [${routes.join(', ')}]\n}\n` : '';
      writeFileSync(s.configFile, `server_name: "${s.name}"\nlisten: "127.0.0.1:${s.port}"\nhttp: "127.0.0.1:${s.monitorPort}"\njetstream {\n  store_dir: "${s.storeDir}"\n}\n${cluster}`);
    }
    for (const s of c.servers) c.run(s);
    try {
      await c.ready();
    } catch (err) {
      const said = c.servers.map((s) => `${s.name}: ${s.output.slice(-5).join(' / ')}`).join('\n');
      await c.stop();
      throw new ClusterDidNotForm(`${(err as Error).message}\n${said}`);
    }
    return c;
  }

  urls(): string[] {
    return this.servers.map((s) => `nats://127.0.0.1:${s.port}`);
  }

  private run(s: NatsServer): void {
    const proc = spawn(natsServerBinary()!, ['-c', s.configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (b: Buffer) => {
      s.output.push(...b.toString().split('\n').filter(Boolean));
      if (s.output.length > 200) s.output.splice(0, s.output.length - 200);
    };
    proc.stdout!.on('data', keep);
    proc.stderr!.on('data', keep);
    s.proc = proc;
  }

  /** Waits until every running server reports the same JetStream meta leader. */
  async ready(ms = 30_000): Promise<void> {
    await until(
      async () => {
        const leaders = await Promise.all(this.servers.filter((s) => s.proc).map(async (s) => (await this.jsz(s)).meta_cluster?.leader ?? null));
        return leaders.length > 0 && leaders.every((l) => l && l === leaders[0]);
      },
      ms,
      'a JetStream meta leader',
    );
  }

  async jsz(
    s: NatsServer,
    query = '',
  ): Promise<{
    meta_cluster?: { leader?: string; replicas?: Array<{ name: string; current: boolean }> };
    account_details?: Array<{ stream_detail?: Array<{ name: string; cluster?: { leader?: string; replicas?: Array<{ name: string; current: boolean }> } }> }>;
  }> {
    const res = await fetch(`http://127.0.0.1:${s.monitorPort}/jsz${query}`, { signal: AbortSignal.timeout(2000) });
    return (await res.json()) as never;
  }

  /** The server a client named `name` (an instance: `switchyard:<id>`) is connected to now, if any. */
  async serverOf(name: string): Promise<NatsServer | undefined> {
    for (const s of this.servers.filter((x) => x.proc)) {
      try {
        const res = await fetch(`http://127.0.0.1:${s.monitorPort}/connz?limit=1024`, { signal: AbortSignal.timeout(2000) });
        const { connections } = (await res.json()) as { connections?: Array<{ name?: string }> };
        if (connections?.some((c) => c.name === name)) return s;
      } catch {
        /* that one is down */
      }
    }
    return undefined;
  }

  /** The server that leads a stream now (asked of any running server). */
  async leaderOf(stream: string): Promise<NatsServer | undefined> {
    for (const s of this.servers.filter((x) => x.proc)) {
      try {
        const j = await this.jsz(s, '?accounts=true&streams=true');
        for (const a of j.account_details ?? []) for (const d of a.stream_detail ?? []) if (d.name === stream && d.cluster?.leader) return this.servers.find((x) => x.name === d.cluster!.leader);
      } catch {
        /* that one is down */
      }
    }
    return undefined;
  }

  /** Whether every replica of the stream is current (a restarted server caught up). */
  async current(stream: string): Promise<boolean> {
    // Only the leader's view of its followers is up to date.
    const leader = await this.leaderOf(stream);
    if (!leader?.proc) return false;
    const j = await this.jsz(leader, '?accounts=true&streams=true');
    for (const a of j.account_details ?? [])
      for (const d of a.stream_detail ?? [])
        if (d.name === stream && d.cluster?.leader === leader.name) return (d.cluster.replicas ?? []).length === this.servers.length - 1 && (d.cluster.replicas ?? []).every((r) => r.current);
    return false;
  }

  /**
   * Whether the cluster is whole again: every server running, current in the meta group and in
   * every stream. A server restarted after a kill catches up group by group; one current in a
   * single stream may still lag in the meta group or another stream, and killing a second server
   * meanwhile leaves those groups without a quorum (two servers lost, not one).
   */
  async whole(): Promise<boolean> {
    try {
      if (this.servers.some((s) => !s.proc)) return false;
      const leaderName = (await this.jsz(this.servers[0]!)).meta_cluster?.leader;
      const metaLeader = this.servers.find((x) => x.name === leaderName);
      if (!metaLeader) return false;
      const j = await this.jsz(metaLeader, '?accounts=true&streams=true');
      const replicas = j.meta_cluster?.replicas ?? [];
      if (replicas.length !== this.servers.length - 1 || !replicas.every((r) => r.current)) return false;
      const streams = new Set<string>();
      for (const a of j.account_details ?? []) for (const d of a.stream_detail ?? []) streams.add(d.name);
      for (const name of streams) if (!(await this.current(name))) return false;
      return streams.size > 0;
    } catch {
      return false;
    }
  }

  kill(s: NatsServer, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const proc = s.proc;
    s.proc = null;
    if (!proc || proc.exitCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      proc.once('exit', () => resolve());
      proc.kill(signal);
    });
  }

  /** Starts a stopped server again; waits until it sees a meta leader (not with `wait` false: a server alone elects none). */
  async restart(s: NatsServer, wait = true): Promise<void> {
    if (!s.proc) this.run(s);
    if (wait) await until(async () => (await this.jsz(s)).meta_cluster?.leader !== undefined, 30_000, `${s.name} back in the cluster`);
  }

  async stop(): Promise<void> {
    await Promise.all(this.servers.map((s) => this.kill(s, 'SIGTERM')));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
