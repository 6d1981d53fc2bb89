// Processes on this machine: whether one is alive, what it runs, and children that each lead
// their own process group, so that stopping one stops everything
// it started (nginx's worker, the ffmpeg a worker execs) and nothing else. A SIGKILL of nginx's
// master alone leaves its worker listening; signalling the group does not.
import { spawn, type StdioOptions } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface GroupChild {
  pid: number;
  /** Settles when the leader exits (the agent is its parent, so it is reaped: no zombie). */
  exited: Promise<Exit>;
  exit: Exit | null;
}

export class SpawnError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
    this.name = 'SpawnError';
  }
}

export async function spawnGroup(command: string, args: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; stdio?: StdioOptions } = {}): Promise<GroupChild> {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: options.stdio ?? 'ignore', detached: true });
  const handle: GroupChild = { pid: 0, exit: null, exited: null as unknown as Promise<Exit> };
  handle.exited = new Promise<Exit>((resolve) => {
    child.once('exit', (code, signal) => {
      handle.exit = { code, signal };
      resolve(handle.exit);
    });
  });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (err: NodeJS.ErrnoException) => reject(new SpawnError(`cannot run ${command}: ${err.message}`, err.code)));
  });
  handle.pid = child.pid!;
  return handle;
}

/** Sends a signal to a whole process group; false when none of it is left. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * SIGTERM to the group, SIGKILL to the group after `graceMs`, and wait for the leader. A last
 * SIGKILL catches members that outlived their leader.
 */
export async function stopGroup(g: GroupChild, graceMs = 300, killWaitMs = 3000): Promise<Exit | null> {
  if (!g.exit) {
    signalGroup(g.pid, 'SIGTERM');
    await Promise.race([g.exited, sleep(graceMs)]);
  }
  if (!g.exit) {
    signalGroup(g.pid, 'SIGKILL');
    await Promise.race([g.exited, sleep(killWaitMs)]);
  }
  signalGroup(g.pid, 'SIGKILL');
  return g.exit;
}

/** Whether `pid` is alive and not a zombie (zombies linger on machines whose init does not reap). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  if (process.platform !== 'linux') return true;
  try {
    const stat = readProcStat(pid);
    return stat !== null && stat.state !== 'Z';
  } catch {
    return false;
  }
}

/** Fields of /proc/<pid>/stat after the command (which may contain spaces and parentheses). */
export function readProcStat(pid: number): { state: string; ppid: number; pgid: number } | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: rest[0] ?? '', ppid: Number(rest[1]), pgid: Number(rest[2]) };
}

/** Live (non-zombie) children of `pid`, from /proc (Linux); [] elsewhere. */
export function childrenOf(pid: number): number[] {
  if (process.platform !== 'linux') return [];
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    const stat = readProcStat(Number(entry));
    if (stat && stat.ppid === pid && stat.state !== 'Z') out.push(Number(entry));
  }
  return out;
}

/** The arguments of a process, or [] when it is gone or not ours to read (or not on Linux). */
export function argvOf(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return [];
  }
}

/** The command line of a process, or '' when it is gone or not ours to read. */
export function cmdline(pid: number): string {
  return argvOf(pid).join(' ');
}

/**
 * Stops the process group a pid file names, if its leader still runs and its command line names
 * `owner` (so a pid reused by a stranger is left alone): SIGTERM, up to a second, then SIGKILL.
 * Answers whether there was one to stop.
 */
export async function stopPidFileGroup(pidFile: string, owner: string): Promise<boolean> {
  let pid: number;
  try {
    pid = Number(readFileSync(pidFile, 'utf8').trim());
  } catch {
    return false;
  }
  if (!Number.isInteger(pid) || pid <= 1 || !alive(pid) || !cmdline(pid).includes(owner)) return false;
  signalGroup(pid, 'SIGTERM');
  const deadline = Date.now() + 1000;
  while (alive(pid) && Date.now() < deadline) await sleep(20);
  signalGroup(pid, 'SIGKILL');
  return true;
}

/**
 * Stops every process group a directory's pid files name (`*.pid`, whose leader's command line
 * names the directory): what a node agent killed outright left running (its media server), found
 * without knowing which programs the agent runs.
 */
export async function stopPidFileGroupsIn(dir: string): Promise<number> {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.pid'));
  } catch {
    return 0;
  }
  let stopped = 0;
  for (const name of names) if (await stopPidFileGroup(join(dir, name), dir)) stopped++;
  return stopped;
}
