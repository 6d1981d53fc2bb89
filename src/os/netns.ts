// Makes and removes a local Janus node's network namespace, veth pair and the shared bridge
// (the plan and why: src/policy/network/netns-plan.ts), with iproute2's `ip`, run without a shell. Root only. Every
// step tolerates what an earlier, killed run left: `up` first removes the node's leftovers, `down`
// removes whatever is there. The bridge is made by the first node of a subnet and removed by the
// last one down, under a lock file shared by every process on the machine (agents of several
// services, tests running side by side), so that no node is put on a bridge being removed.
import { execFile } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { alive } from './process-group.js';
import { isIPv4 } from '../policy/network/ipv4.js';
import { findProgram } from './programs.js';
import { NETNS_PREFIX, type NetnsPlan } from '../policy/network/netns-plan.js';

export class NetnsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NetnsError';
  }
}

function ipBinary(): string {
  const ip = findProgram('ip');
  if (!ip) throw new NetnsError('`ip` (iproute2) is not installed: apt-get install iproute2 (npm run setup:media)');
  return ip;
}

/** Runs `ip` with these arguments; resolves with its output, rejects with its own words. */
function ip(args: readonly string[], timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(ipBinary(), args, { timeout: timeoutMs, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) reject(new NetnsError(`ip ${args.join(' ')}: ${(stderr || err.message).trim()}`));
      else resolve(stdout);
    });
  });
}

/** The same, where failure means "already gone" (removing something that is not there). */
async function ipQuiet(args: readonly string[]): Promise<void> {
  await ip(args).catch(() => undefined);
}

/** Why this process cannot make namespaces, or null when it can (root, on Linux). */
export function netnsUnavailable(): string | null {
  if (process.platform !== 'linux') return 'network namespaces are Linux only';
  if (process.getuid?.() !== 0) return 'making network namespaces needs root (Janus nodes on the local platform: docs/webrtc.md#janus-nodes)';
  return null;
}

export async function namespaceExists(name: string): Promise<boolean> {
  return (await ip(['netns', 'list'])).split('\n').some((l) => l.split(' ')[0] === name);
}

export async function linkExists(name: string): Promise<boolean> {
  return ip(['link', 'show', 'dev', name]).then(
    () => true,
    () => false,
  );
}

/** Processes still inside a namespace (a Janus an agent killed outright left behind). */
export async function namespacePids(name: string): Promise<number[]> {
  const out = await ip(['netns', 'pids', name]).catch(() => '');
  return out
    .split('\n')
    .map((l) => Number(l.trim()))
    .filter((n) => Number.isInteger(n) && n > 1);
}

/**
 * Runs `op` holding the bridge's lock: a file made exclusively, naming its holder's pid; one whose
 * holder died is taken over. Bounded: a lock held past 10 s is an error.
 */
async function withBridgeLock<T>(bridge: string, op: () => Promise<T>): Promise<T> {
  const file = join(existsSync('/run/lock') ? '/run/lock' : tmpdir(), `${bridge}.lock`);
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      let holder = 0;
      try {
        holder = Number(readFileSync(file, 'utf8'));
      } catch {
        continue;
      }
      // Still being written (no pid yet), or held by a live process: wait; a dead holder's: taken over.
      if (holder > 0 && !alive(holder)) rmSync(file, { force: true });
      else if (Date.now() > deadline) throw new NetnsError(`the lock of bridge ${bridge} (${file}) is held by ${holder || 'a process'} for over 10 s`);
      else await sleep(10);
    }
  }
  try {
    return await op();
  } finally {
    rmSync(file, { force: true });
  }
}

/** The bridge exists, is up and holds its address; made when missing. */
async function ensureBridge(plan: NetnsPlan): Promise<void> {
  if (!(await linkExists(plan.bridge))) {
    await ip(['link', 'add', plan.bridge, 'type', 'bridge']).catch(async (err: Error) => {
      // Another node of the subnet made it meanwhile.
      if (!(await linkExists(plan.bridge))) throw err;
    });
  }
  const addresses = await ip(['-4', '-o', 'addr', 'show', 'dev', plan.bridge]);
  if (!addresses.includes(` ${plan.bridgeAddress}/`)) {
    await ip(['addr', 'add', `${plan.bridgeAddress}/${plan.prefix}`, 'dev', plan.bridge]).catch((err: Error) => {
      if (!/exists/i.test(err.message)) throw err;
    });
  }
  await ip(['link', 'set', plan.bridge, 'up']);
}

/** Removes the bridge when no node's link is on it any more. */
async function dropBridgeIfUnused(plan: NetnsPlan): Promise<void> {
  const ports = await ip(['-o', 'link', 'show', 'master', plan.bridge]).catch(() => null);
  if (ports === null || ports.trim() !== '') return;
  await ipQuiet(['link', 'del', plan.bridge]);
}

/**
 * Removes the node's namespace, veth pair and (if it was the last) the bridge. Processes still
 * in the namespace keep its network alive: stop them first (the caller knows which are its own).
 */
export async function netnsDown(plan: NetnsPlan): Promise<void> {
  if (await namespaceExists(plan.namespace)) await ipQuiet(['netns', 'del', plan.namespace]);
  // Gone with the namespace, unless a process still held it.
  if (await linkExists(plan.hostLink)) await ipQuiet(['link', 'del', plan.hostLink]);
  await withBridgeLock(plan.bridge, () => dropBridgeIfUnused(plan));
}

/** Makes the node's namespace and links afresh (after removing any left by an earlier run). */
export async function netnsUp(plan: NetnsPlan): Promise<void> {
  const why = netnsUnavailable();
  if (why) throw new NetnsError(why);
  if (await namespaceExists(plan.namespace)) await ipQuiet(['netns', 'del', plan.namespace]);
  if (await linkExists(plan.hostLink)) await ipQuiet(['link', 'del', plan.hostLink]);
  await ip(['netns', 'add', plan.namespace]);
  try {
    await ip(['link', 'add', plan.hostLink, 'type', 'veth', 'peer', 'name', plan.nodeLink, 'netns', plan.namespace]);
    await withBridgeLock(plan.bridge, async () => {
      await ensureBridge(plan);
      await ip(['link', 'set', plan.hostLink, 'master', plan.bridge, 'up']);
    });
    const inside = (...args: string[]) => ip(['-n', plan.namespace, ...args]);
    await inside('link', 'set', 'lo', 'up');
    await inside('addr', 'add', `${plan.address}/${plan.prefix}`, 'dev', plan.nodeLink);
    await inside('link', 'set', plan.nodeLink, 'up');
    // Clients on the host's other addresses are reached through the root namespace, which owns them.
    await inside('route', 'add', 'default', 'via', plan.bridgeAddress);
  } catch (err) {
    await netnsDown(plan);
    throw err;
  }
}

/** The command that runs `argv` inside the namespace (as the same user). */
export function inNamespace(plan: Pick<NetnsPlan, 'namespace'>, argv: readonly string[]): { command: string; args: string[] } {
  return { command: ipBinary(), args: ['netns', 'exec', plan.namespace, ...argv] };
}

/**
 * The node's plan, kept in its directory while its namespace may exist: whoever cleans up after
 * an agent killed outright (the local platform) removes what it names, without knowing why the
 * agent made it.
 */
export const NETNS_RECORD = 'netns.json';

export function recordPlan(dir: string, plan: NetnsPlan): void {
  const file = join(dir, NETNS_RECORD);
  writeFileSync(`${file}.tmp`, JSON.stringify(plan), { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
}

export function forgetPlan(dir: string): void {
  rmSync(join(dir, NETNS_RECORD), { force: true });
}

const NAME_RE = new RegExp(`^${NETNS_PREFIX}[a-z0-9-]{1,13}$`);

/** The plan a node directory records, checked to name only things this module makes; null when there is none. */
export function recordedPlan(dir: string): NetnsPlan | null {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(join(dir, NETNS_RECORD), 'utf8'));
  } catch {
    return null;
  }
  const p = raw as Partial<NetnsPlan>;
  const names = [p.namespace, p.hostLink, p.nodeLink, p.bridge];
  if (!names.every((n) => typeof n === 'string' && NAME_RE.test(n))) return null;
  if (typeof p.address !== 'string' || !isIPv4(p.address) || typeof p.bridgeAddress !== 'string' || !isIPv4(p.bridgeAddress)) return null;
  if (!Number.isInteger(p.prefix)) return null;
  return p as NetnsPlan;
}

/** Removes the namespace a node directory records (its processes stopped first), and the record. */
export async function removeRecordedNetns(dir: string): Promise<boolean> {
  const plan = recordedPlan(dir);
  if (!plan || netnsUnavailable()) return false;
  await netnsDown(plan);
  forgetPlan(dir);
  return true;
}
