// Servers under test run as child processes; the bench process is the load generator.
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectPath } from '../../src/paths.js';

export interface Running {
  url: string;
  proc: ChildProcess;
  stop(): Promise<void>;
}

export async function runServer(script: string, env: Record<string, string> = {}, args: string[] = [], nodeArgs: string[] = []): Promise<Running> {
  const proc = spawn(process.execPath, [...nodeArgs, script, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(() => reject(new Error(`${script} did not start`)), 30_000);
    proc.stdout!.on('data', (c: Buffer) => {
      buffer += c.toString();
      for (const line of buffer.split('\n')) {
        try {
          const entry = JSON.parse(line) as { msg?: string; url?: string };
          if (entry.msg === 'listening' && entry.url) {
            clearTimeout(timer);
            resolve(entry.url);
          }
        } catch {
          /* partial or non-JSON line */
        }
      }
      buffer = buffer.slice(buffer.lastIndexOf('\n') + 1);
    });
    proc.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  proc.stdout!.resume();
  return {
    url,
    proc,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
        setTimeout(() => proc.kill('SIGKILL'), 15_000).unref();
      }),
  };
}

/**
 * Writes a bench's config file for the service, `dir`/config.json, and answers its path: the
 * service on loopback at any port, its data in `dir`/data, and `settings` (node groups, limits,
 * geoip, auth) beside them.
 */
export function benchConfig(dir: string, settings: object): string {
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({ server: { host: '127.0.0.1', port: 0 }, dataDir: join(dir, 'data'), ...settings }));
  return file;
}

/** An access token of the service's admin (the password the benches start it with). */
export async function adminToken(url: string): Promise<string> {
  const login = await fetch(`${url}/as/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: BENCH_PASSWORD }) });
  return ((await login.json()) as { accessToken: string }).accessToken;
}

export const baseline = (name: 'bare-http' | 'bare-koa') => runServer(projectPath('dist', 'bench', 'baselines', `${name}.js`));

export const BENCH_SECRET = 'bench-secret-that-is-at-least-32-bytes!';
export const BENCH_PASSWORD = 'bench-admin-password';
/**
 * The service's default nodeTokenTtl. A shorter token is past half its life from the start, so
 * the service would sign a fresh one into every heartbeat reply (an agent adopts it; a load
 * generator would not, and would measure signing instead of ingestion).
 */
export const BENCH_NODE_TOKEN_TTL = 24 * 3_600_000;

/** Switchyard with one static node group of `origins` origins and `edges` edges, never timing out. */
export async function switchyard(dir: string, options: { origins: number; edges: number; regions?: number; nodeArgs?: string[]; groups?: number }): Promise<Running> {
  const regions = Array.from({ length: options.regions ?? 1 }, (_, i) => ({ name: `r${i + 1}`, lat: 50 - i * 10, lon: i * 30 }));
  const nodes = [
    ...Array.from({ length: options.origins }, (_, i) => ({ id: `o${i}`, role: 'origin', region: regions[i % regions.length]!.name, address: `10.1.${i >> 8}.${i & 255}` })),
    ...Array.from({ length: options.edges }, (_, i) => ({ id: `e${i}`, role: 'edge', region: regions[i % regions.length]!.name, address: `10.2.${i >> 8}.${i & 255}` })),
  ];
  const file = benchConfig(dir, {
    nodeGroups: [
      {
        name: 'bench',
        platform: { type: 'static', static: { nodes } },
        regions,
        roles: { origin: { publish: { protocol: 'rtmp', port: 1935 } }, edge: { parentRole: 'origin', subscribe: { protocol: 'wss', port: 443 } } },
        rules: regions.flatMap((r) => [
          { region: r.name, role: 'origin', min: 0, max: 1024, limit: 1e12 },
          { region: r.name, role: 'edge', min: 0, max: 1024, limit: 1e12 },
        ]),
        timing: { nodeTimeout: '1h', heartbeatMs: 600_000, publishTimeout: '1h', streamTimeout: '1h' },
        // A bench publishes a million new streams from one token: no PENDING caps here.
        limits: { pendingBindings: 10_000_000, pendingPerToken: 10_000_000 },
      },
    ],
    // The load generator is one token: no lookup rate limit for it.
    limits: { lookups: { admin: { perSecond: 0, burst: 1 } } },
  });
  return runServer(
    projectPath('dist', 'src', 'main.js'),
    { SWITCHYARD_CONFIG: file, SWITCHYARD_ADMIN_PASSWORD: BENCH_PASSWORD, SWITCHYARD_JWT_SECRET: BENCH_SECRET, SWITCHYARD_LOG_LEVEL: 'info' },
    [],
    options.nodeArgs ?? [],
  );
}
