// One nginx master (daemon off) as a child of the agent, leading its own process group: started
// once its ports are known free, ready when its stat page answers, reloaded with SIGHUP, stopped
// with SIGTERM then SIGKILL to the group. An exit the agent did not ask for is reported.
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { nodePaths } from './nginx-config.js';
import { childrenOf, signalGroup, spawnGroup, SpawnError, stopGroup, stopPidFileGroup, type Exit, type GroupChild } from '../../os/process-group.js';

export class NginxStartError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NginxStartError';
  }
}

export function describeExit(exit: Exit): string {
  return exit.signal ? `killed by ${exit.signal}` : `exited with code ${exit.code}`;
}

const urlHost = (address: string) => (address.includes(':') ? `[${address}]` : address);

export async function fetchStat(address: string, port: number, timeoutMs: number): Promise<string> {
  const res = await fetch(`http://${urlHost(address)}:${port}/stat`, { signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  if (!res.ok) throw new Error(`the stat page answered ${res.status}`);
  return text;
}

/** The last lines of a log, for a message that says why nginx would not start. */
export function tail(file: string, lines = 5): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/**
 * Stops the nginx (and whatever its workers exec) of a node directory whose agent is gone:
 * recognised by its pid file and a command line naming the directory. True if one was running.
 */
/** Stops an nginx a node's directory's pid file names (one an agent killed outright left running). */
export function stopNginxOf(dir: string): Promise<boolean> {
  return stopPidFileGroup(nodePaths(dir).pid, dir);
}

export class NginxProcess {
  private child: GroupChild | null = null;
  private stopping = false;
  /** Called when nginx exits without being asked to. */
  onExit: ((exit: Exit) => void) | null = null;

  constructor(
    private readonly binary: string,
    private readonly dir: string,
  ) {}

  get pid(): number | null {
    return this.child && !this.child.exit ? this.child.pid : null;
  }

  /**
   * Whether the running master exits within `ms`: a stat page that stops answering is most often
   * nginx dying, whose exit the agent hears a moment later; the report then says why.
   */
  async exitsWithin(ms: number): Promise<boolean> {
    const child = this.child;
    if (!child || child.exit) return child !== null;
    let timer: NodeJS.Timeout | undefined;
    const exited = await Promise.race([child.exited.then(() => true), new Promise<false>((r) => (timer = setTimeout(r, ms, false)))]);
    clearTimeout(timer);
    return exited;
  }

  /** A master left by an earlier agent of this node (killed with -9, say) still holds the ports. */
  stopStale(): Promise<boolean> {
    return stopNginxOf(this.dir);
  }

  /** Starts nginx and resolves once its stat page answers; rejects with nginx's own words if it exits first. */
  async start(address: string, statPort: number, readyTimeoutMs = 5000): Promise<void> {
    if (this.pid !== null) throw new Error('nginx is already running');
    const p = nodePaths(this.dir);
    const out = openSync(join(this.dir, 'nginx.out'), 'a');
    let child: GroupChild;
    try {
      child = await spawnGroup(this.binary, ['-p', this.dir, '-c', p.config, '-e', p.errorLog], { cwd: this.dir, stdio: ['ignore', out, out] });
    } catch (err) {
      if (err instanceof SpawnError && err.code === 'ENOENT') {
        throw new NginxStartError(`${this.binary} not found: install nginx, libnginx-mod-rtmp and ffmpeg (Debian: apt-get install nginx libnginx-mod-rtmp ffmpeg)`);
      }
      throw err;
    } finally {
      closeSync(out);
    }
    this.child = child;
    this.stopping = false;
    void child.exited.then((exit) => {
      if (this.child !== child || this.stopping) return;
      // Its worker may outlive a killed master and keep the ports: clear the whole group.
      signalGroup(child.pid, 'SIGKILL');
      this.onExit?.(exit);
    });
    const deadline = Date.now() + readyTimeoutMs;
    for (;;) {
      if (child.exit) {
        const why = tail(p.errorLog, 3) || tail(join(this.dir, 'nginx.out'), 3);
        throw new NginxStartError(`nginx ${describeExit(child.exit)} at start${why ? `: ${why}` : ''}`);
      }
      try {
        await fetchStat(address, statPort, 500);
        return;
      } catch {
        /* not listening yet */
      }
      if (Date.now() > deadline) {
        await this.stop();
        throw new NginxStartError(`nginx did not answer on its stat page within ${readyTimeoutMs} ms`);
      }
      await sleep(20);
    }
  }

  /** Asks the master to load the config again (new workers; connected clients stay on the old ones). */
  reload(): boolean {
    const pid = this.pid;
    if (pid === null) return false;
    try {
      process.kill(pid, 'SIGHUP');
      return true;
    } catch {
      return false;
    }
  }

  /** Workers of an older config still serving their clients after a reload (Linux; [] elsewhere). */
  olderWorkers(currentWorker: number | null): number[] {
    const pid = this.pid;
    return pid === null ? [] : childrenOf(pid).filter((w) => w !== currentWorker);
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.stopping = true;
    await stopGroup(child);
    this.child = null;
  }
}
