// The service as a real child process (`node dist/src/main.js`), for tests that kill it.
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import { projectPath } from '../../src/paths.js';
import { request } from './http.js';
import { mediaTools, Processes, report } from './media.js';
import { killAgentsOf, tempDir } from './service.js';

export interface ServiceProcess {
  proc: ChildProcess;
  url: string;
  output: string[];
  exited: Promise<number | null>;
}

export interface LaunchedService {
  proc: ChildProcess;
  /** Settles when the service logs that it listens; rejects if it exits first. */
  url: Promise<string>;
  output: string[];
  exited: Promise<number | null>;
}

/** Starts the program without waiting for it (the torture kills it while it starts); keeps the last `keep` lines it prints. */
export function launchService(env: Record<string, string>, keep = Infinity): LaunchedService {
  const proc = spawn(process.execPath, ['--enable-source-maps', projectPath('dist', 'src', 'main.js')], {
    env: { PATH: process.env.PATH ?? '', SWITCHYARD_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const keepLine = (line: string) => {
    output.push(line);
    if (output.length > keep) output.shift();
  };
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const url = new Promise<string>((resolve, reject) => {
    let buffer = '';
    proc.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        keepLine(line);
        try {
          const entry = JSON.parse(line) as { msg?: string; url?: string };
          if (entry.msg === 'listening' && entry.url) resolve(entry.url);
        } catch {
          /* not a log line */
        }
      }
    });
    proc.stderr!.on('data', (c: Buffer) => keepLine(c.toString()));
    void exited.then((code) => reject(new Error(`the service exited (${code}) before listening:\n${output.slice(-20).join('\n')}`)));
  });
  url.catch(() => {});
  return { proc, url, output, exited };
}

/** Starts the program and waits until it listens; one that does not within `timeoutMs` is killed. */
export async function spawnService(env: Record<string, string>, timeoutMs = 60_000): Promise<ServiceProcess> {
  const launched = launchService(env);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      // Not left behind holding its port and data directory.
      launched.proc.kill('SIGKILL');
      reject(new Error(`the service did not start within ${timeoutMs} ms:\n${launched.output.slice(-20).join('\n')}`));
    }, timeoutMs);
  });
  try {
    return { ...launched, url: await Promise.race([launched.url, late]) };
  } finally {
    clearTimeout(timer);
  }
}

export const E2E_PASSWORD = 'e2e-admin-password';

/**
 * The service as its own program on the test's config, in a directory of its own. When the test
 * ends the program is killed, its local nodes stopped and the directory removed; a failed test
 * logs the service's last lines and each agent's.
 */
export class OwnService {
  readonly dir = tempDir('switchyard-e2e-');
  readonly dataDir = join(this.dir, 'data');
  readonly env: Record<string, string>;
  private current: ServiceProcess | null = null;

  private constructor(t: ExecutionContext, config: object, env: Record<string, string>) {
    const file = join(this.dir, 'config.json');
    writeFileSync(file, JSON.stringify(config));
    this.env = { SWITCHYARD_CONFIG: file, SWITCHYARD_DATA_DIR: this.dataDir, SWITCHYARD_ADMIN_PASSWORD: E2E_PASSWORD, ...env };
    t.teardown(() => {
      if (this.current && this.current.proc.exitCode === null) this.current.proc.kill('SIGKILL');
      killAgentsOf(this.dataDir);
      if (!t.passed && this.current) report(t, this.dataDir, this.current.output);
      rmSync(this.dir, { recursive: true, force: true });
    });
  }

  static async start(t: ExecutionContext, config: object, env: Record<string, string> = {}): Promise<OwnService> {
    const own = new OwnService(t, config, env);
    await own.spawn();
    return own;
  }

  /** Starts the program, again after it was stopped or killed. */
  async spawn(): Promise<ServiceProcess> {
    this.current = await spawnService(this.env);
    return this.current;
  }

  get process(): ServiceProcess {
    return this.current!;
  }

  get url(): string {
    return this.current!.url;
  }

  async login(): Promise<string> {
    const r = await request(this.url, 'POST', '/as/v1/auth/login', { username: 'admin', password: E2E_PASSWORD });
    return (r.json as { accessToken: string }).accessToken;
  }
}

/**
 * The service as a process on real media nodes: the node groups given (see rtmpGroup), with the
 * settings every media test shares, in a config file in the test's directory; logged in as admin.
 * At teardown the test's ffmpegs stop first, then the service gently (SIGTERM: its agents stop
 * their nginx; SIGKILL after 10 s), then whatever agent is left; on failure, what the service and
 * each node said.
 */
export async function mediaService(t: ExecutionContext, prefix: string, nodeGroups: readonly object[], password: string) {
  const tools = mediaTools();
  const dir = tempDir(prefix);
  const dataDir = join(dir, 'data');
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ server: { host: '127.0.0.1', port: 0 }, supervisorTick: '200ms', geoip: { enabled: false }, nodeGroups }));
  const env = { SWITCHYARD_CONFIG: config, SWITCHYARD_DATA_DIR: dataDir, SWITCHYARD_ADMIN_PASSWORD: password };
  const ffmpegs = new Processes(t);
  let svc: ServiceProcess | null = null;
  t.teardown(async () => {
    await ffmpegs.stopAll();
    if (svc && svc.proc.exitCode === null) {
      svc.proc.kill('SIGTERM');
      await Promise.race([svc.exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (svc.proc.exitCode === null) svc.proc.kill('SIGKILL');
    }
    killAgentsOf(dataDir);
    if (!t.passed) report(t, dataDir, svc?.output ?? []);
    rmSync(dir, { recursive: true, force: true });
  });
  svc = await spawnService(env);
  const token = (await request(svc.url, 'POST', '/as/v1/auth/login', { username: 'admin', password })).json as { accessToken: string };
  return { svc, token: token.accessToken, tools, ffmpegs, dataDir };
}
