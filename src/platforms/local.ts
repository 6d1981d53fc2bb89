// The embedded default (docs/nodes.md): each node is a node-agent process on this machine, on its
// own loopback address (127.0.0.2, 127.0.0.3, … on Linux) so that serverAddress tells nodes apart
// as on a real fleet. Agents run in their own process groups and outlive a crash of the service,
// which finds them again by their heartbeats; a clean stop stops them.
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { NodeGroup } from '../config/types.js';
import type { PlatformData } from '../domain/records.js';
import { projectPath } from '../paths.js';
import { intToIp, ipToInt } from '../policy/network/ipv4.js';
import { removeRecordedNetns } from '../os/netns.js';
import { alive, argvOf, signalGroup, stopPidFileGroupsIn } from '../os/process-group.js';
import { capabilitiesOf } from '../domain/capabilities.js';
import { PlatformError, type NewNode, type NodeRef, type Platform, type Reconciliation } from './platform.js';

export interface LocalPlatformOptions {
  /** The URL node agents post their events to. */
  serviceUrl: string;
  dataDir: string;
  /** Mints the node token an agent authenticates with. */
  nodeToken(group: string, nodeId: string): string;
  /** How long an agent keeps running without reaching the service. */
  orphanTimeoutMs?: number;
}

const AGENT = projectPath('dist', 'src', 'agent', 'main.js');
const DISTINCT_LOOPBACK = process.platform === 'linux';

function pick(env: NodeJS.ProcessEnv, names: readonly string[]): Record<string, string> {
  return Object.fromEntries(names.filter((n) => env[n]).map((n) => [n, env[n]!]));
}

/** Whether `pid` is the node agent of `nodeId` (not a stranger that reused the pid). */
function isAgent(pid: number, nodeId: string): boolean {
  if (!alive(pid)) return false;
  if (process.platform !== 'linux') return true;
  const argv = argvOf(pid);
  return argv.includes('--node-id') && argv[argv.indexOf('--node-id') + 1] === nodeId;
}

/** The agent's process group (it leads one), or the agent alone if it does not. */
function signalAgent(pid: number, signal: NodeJS.Signals): void {
  if (signalGroup(pid, signal)) return;
  try {
    process.kill(pid, signal);
  } catch {
    /* already gone */
  }
}

async function waitGone(pid: number, nodeId: string, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (!isAgent(pid, nodeId)) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return !isAgent(pid, nodeId);
}

export class LocalPlatform implements Platform {
  readonly capabilities = capabilitiesOf('local');
  private readonly used = new Set<string>();

  constructor(private readonly options: LocalPlatformOptions) {}

  prepare(group: NodeGroup, _node: NewNode): PlatformData {
    if (!DISTINCT_LOOPBACK) return { type: 'local', address: '127.0.0.1' };
    let n = ipToInt(group.platform.local.firstAddress);
    const last = ipToInt('127.255.255.254');
    while (this.used.has(intToIp(n)) && n <= last) n++;
    if (n > last) throw new PlatformError('no free loopback address left');
    const address = intToIp(n);
    this.used.add(address);
    return { type: 'local', address };
  }

  async create(group: NodeGroup, node: NodeRef): Promise<PlatformData> {
    if (node.platform.type !== 'local') throw new PlatformError(`node ${node.id} is not a local node`);
    const address = node.platform.address;
    this.used.add(address);
    const dir = join(this.options.dataDir, 'nodes', node.id);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const log = openSync(join(dir, 'agent.log'), 'a', 0o600);
    try {
      const child = spawn(process.execPath, ['--enable-source-maps', AGENT, '--node-id', node.id], {
        detached: true,
        stdio: ['ignore', log, log],
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          SWITCHYARD_URL: this.options.serviceUrl,
          SWITCHYARD_NODE_ID: node.id,
          SWITCHYARD_NODE_TOKEN: this.options.nodeToken(group.name, node.id),
          SWITCHYARD_NODE_ROLE: node.role,
          SWITCHYARD_NODE_SCOPE: group.scope,
          SWITCHYARD_NODE_ADDRESS: address,
          SWITCHYARD_NODE_PORT: String(group.platform.local.port),
          SWITCHYARD_NODE_BACKEND: group.platform.local.backend,
          SWITCHYARD_NODE_STAT_PORT: String(group.platform.local.statPort),
          SWITCHYARD_NODE_DIR: dir,
          // Where the media programs are, when not on PATH (nginx-rtmp and janus nodes).
          ...pick(process.env, ['SWITCHYARD_NGINX_BIN', 'SWITCHYARD_FFMPEG_BIN', 'SWITCHYARD_NGINX_RTMP_MODULE', 'SWITCHYARD_JANUS_BIN', 'SWITCHYARD_JANUS_LIB_DIR']),
          // Janus nodes get a network namespace of their own on this subnet (docs/webrtc.md, "Janus nodes").
          ...(group.platform.local.backend === 'janus' ? { SWITCHYARD_JANUS_SUBNET: group.platform.local.janus.subnet } : {}),
          SWITCHYARD_ORPHAN_TIMEOUT_MS: String(this.options.orphanTimeoutMs ?? 5 * 60_000),
        },
      });
      const pid = await new Promise<number>((resolve, reject) => {
        child.once('spawn', () => resolve(child.pid!));
        child.once('error', (err) => reject(new PlatformError(`cannot start the node agent: ${err.message}`)));
      });
      child.unref();
      return { type: 'local', address, pid };
    } finally {
      closeSync(log);
    }
  }

  async destroy(node: NodeRef): Promise<void> {
    if (node.platform.type !== 'local') return;
    const pid = node.platform.pid;
    if (pid !== undefined && isAgent(pid, node.id)) {
      signalAgent(pid, 'SIGTERM');
      if (!(await waitGone(pid, node.id, 3000))) {
        signalAgent(pid, 'SIGKILL');
        if (!(await waitGone(pid, node.id, 2000))) throw new PlatformError(`node agent ${pid} of ${node.id} does not exit`);
      }
    }
    // An agent that was killed outright could not stop its media server: stop what the node's
    // directory's pid files name (the agent's own business which programs those are).
    await stopPidFileGroupsIn(join(this.options.dataDir, 'nodes', node.id));
    // And the network namespace it recorded (Janus nodes: docs/webrtc.md, "Janus nodes"), once nothing runs in it.
    await removeRecordedNetns(join(this.options.dataDir, 'nodes', node.id));
    this.used.delete(node.platform.address);
    rmSync(join(this.options.dataDir, 'nodes', node.id), { recursive: true, force: true });
  }

  /** Whether a recorded node's agent still runs (and its address is taken either way). */
  private exists(node: NodeRef): boolean {
    if (node.platform.type !== 'local') return false;
    this.used.add(node.platform.address);
    return node.platform.pid !== undefined && isAgent(node.platform.pid, node.id);
  }

  /** Agents outlive a crash of the service: those still running are adopted, the others are missing. */
  async reconcile(_group: NodeGroup, nodes: readonly NodeRef[]): Promise<Reconciliation> {
    return { listed: [], missing: nodes.filter((n) => !this.exists(n)).map((n) => n.id), missingReason: 'its local node is gone', retired: [], orphans: [] };
  }

  /** Local agents are all recorded: an unknown one exits by itself after orphanTimeout. */
  async removeOrphan(): Promise<void> {}

  reconfigure(): void {}

  async shutdown(nodes: readonly NodeRef[]): Promise<void> {
    await Promise.allSettled(nodes.filter((n) => n.platform.type === 'local').map((n) => this.destroy(n)));
  }
}
