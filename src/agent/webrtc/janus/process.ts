// One Janus gateway as a child of the agent, leading its own process group, inside the node's
// network namespace when it has one: configured from scratch at each start, ready when its admin
// API answers `info`, stopped with SIGTERM then SIGKILL to the group. Its pid is written beside its
// config, so that the local platform can stop it after the agent was killed outright. An exit the
// agent did not ask for is reported (the engine restarts it with backoff).
import { closeSync, mkdirSync, openSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { spawnGroup, SpawnError, stopGroup, stopPidFileGroup, type Exit, type GroupChild } from '../../../os/process-group.js';
import { describeExit, tail } from '../../media/nginx-process.js';
import { janusPaths, renderJanusConfig, type JanusNode } from './config.js';

export class JanusStartError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JanusStartError';
  }
}

/** How to run a program: directly, or wrapped (inside a network namespace: src/os/netns.ts). */
export type Launcher = (argv: readonly string[]) => { command: string; args: string[] };
export const DIRECT: Launcher = (argv) => ({ command: argv[0]!, args: argv.slice(1) });

/** The admin API's `info`: whether Janus answers, and its version (1102 for 1.1.2). */
export async function adminInfo(n: Pick<JanusNode, 'controlAddress' | 'adminPort' | 'secrets'>, timeoutMs: number): Promise<{ version: number; versionString: string }> {
  const res = await fetch(`http://${n.controlAddress}:${n.adminPort}/admin`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ janus: 'info', transaction: 'ready', admin_secret: n.secrets.admin }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const body = (await res.json()) as { janus?: unknown; version?: unknown; version_string?: unknown };
  if (body.janus !== 'server_info') throw new Error(`the admin API answered ${JSON.stringify(body).slice(0, 200)}`);
  return { version: Number(body.version), versionString: String(body.version_string) };
}

export class JanusProcess {
  private child: GroupChild | null = null;
  private stopping = false;
  /** Called when Janus exits without being asked to. */
  onExit: ((exit: Exit) => void) | null = null;

  constructor(
    private readonly binary: string,
    private readonly launcher: Launcher = DIRECT,
  ) {}

  get pid(): number | null {
    return this.child && !this.child.exit ? this.child.pid : null;
  }

  /** A Janus left by an earlier agent of this node (killed with -9) still holds the namespace and its ports. */
  static stopStale(dir: string): Promise<boolean> {
    return stopPidFileGroup(janusPaths(dir).pid, dir);
  }

  /** Writes the config folder, starts Janus and resolves once its admin API answers; rejects with Janus's own words if it exits first. */
  async start(node: JanusNode, readyTimeoutMs = 15_000): Promise<{ version: number; versionString: string }> {
    if (this.pid !== null) throw new Error('janus is already running');
    const p = janusPaths(node.dir);
    mkdirSync(p.conf, { recursive: true });
    for (const [name, text] of Object.entries(renderJanusConfig(node))) {
      writeFileSync(join(p.conf, `${name}.tmp`), text, { mode: 0o600 });
      renameSync(join(p.conf, `${name}.tmp`), join(p.conf, name));
    }
    // `ulimit -c 0`: a crashing Janus leaves no 100 MB core file in the node's folder.
    const run = this.launcher([this.binary, '-C', p.main, '-F', p.conf, '-N', '-o']);
    const out = openSync(p.out, 'a', 0o600);
    let child: GroupChild;
    try {
      child = await spawnGroup('/bin/sh', ['-c', 'ulimit -c 0; exec "$@"', 'janus', run.command, ...run.args], { cwd: node.dir, stdio: ['ignore', out, out] });
    } catch (err) {
      if (err instanceof SpawnError && err.code === 'ENOENT') throw new JanusStartError('/bin/sh not found');
      throw err;
    } finally {
      closeSync(out);
    }
    this.child = child;
    this.stopping = false;
    writeFileSync(p.pid, `${child.pid}\n`, { mode: 0o600 });
    void child.exited.then((exit) => {
      if (this.child !== child || this.stopping) return;
      this.onExit?.(exit);
    });
    const deadline = Date.now() + readyTimeoutMs;
    for (;;) {
      if (child.exit) {
        const why = tail(p.log, 3) || tail(p.out, 3);
        if (child.exit.code === 127 || /not found|No such file/i.test(why)) {
          throw new JanusStartError(`${this.binary} did not run: install Debian's janus (npm run setup:media)${why ? `: ${why}` : ''}`);
        }
        throw new JanusStartError(`janus ${describeExit(child.exit)} at start${why ? `: ${why}` : ''}`);
      }
      try {
        return await adminInfo(node, 500);
      } catch {
        /* not listening yet */
      }
      if (Date.now() > deadline) {
        await this.stop();
        throw new JanusStartError(`janus did not answer on its admin API within ${readyTimeoutMs} ms: ${tail(p.log, 3)}`);
      }
      await sleep(25);
    }
  }

  /** SIGTERM (Janus takes 1 to 2 s to say "Bye!"), SIGKILL after 3 s. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.stopping = true;
    await stopGroup(child, 3000);
    this.child = null;
  }
}
