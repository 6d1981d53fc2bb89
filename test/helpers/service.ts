// Starts a real service in the test process (real LMDB in a temp directory, real worker threads,
// real HTTP on a free loopback port) and gives tests what they need to talk to it.
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import { ActorHost } from '../../actors/host.js';
import type { EventBody } from '../../src/domain/events.js';
import { parseConfig } from '../../src/config/load.js';
import type { Config, NodeGroup } from '../../src/config/types.js';
import type { TokenSigner } from '../../src/auth/tokens.js';
import { createLogger } from '../../src/observability/log.js';
import { startService, type Service, type ServiceOptions } from '../../src/root/service.js';
import { request, type Reply } from './http.js';
import { staticGroup, tempDir } from './fixtures.js';

// Fixtures live apart (./fixtures.ts), so that unit tests need not load the whole service for them.
export { staticGroup, tempDir };

export const ADMIN_PASSWORD = 'correct-horse-battery';
/**
 * ADMIN_PASSWORD as the config's scrypt hash, at a cost of 2^10 (the service hashes at 2^15): a
 * test service then hashes nothing at start and checks a login in milliseconds. Tests of the
 * password from the environment set SWITCHYARD_ADMIN_PASSWORD in `env`, and get no hash.
 */
export const ADMIN_PASSWORD_HASH = 'scrypt$1024$8$1$c3dpdGNoeWFyZC10ZXN0cw$t946HPQOtpc0cstqbjlsO9ryf6yMkXIIdVveQMtWAOc';
export const JWT_SECRET = 'test-secret-that-is-at-least-32-bytes-long';

export interface TestService {
  url: string;
  dataDir: string;
  config: Config;
  service: Service;
  adminToken: string;
  signer: TokenSigner;
  get(path: string, token?: string | null, headers?: Record<string, string>): Promise<Reply>;
  send(method: string, path: string, body: unknown, token?: string | null, headers?: Record<string, string>): Promise<Reply>;
  close(options?: { stopNodes?: boolean }): Promise<void>;
}

export interface StartOptions extends ServiceOptions {
  groups?: unknown[];
  config?: Record<string, unknown>;
  env?: Record<string, string>;
  dataDir?: string;
  /** Skip logging in as admin (for tests of the initial password). */
  noLogin?: boolean;
}

export async function startTestService(options: StartOptions = {}): Promise<TestService> {
  const dataDir = options.dataDir ?? tempDir();
  const fromEnv = options.env !== undefined && 'SWITCHYARD_ADMIN_PASSWORD' in options.env;
  const raw = {
    server: { host: '127.0.0.1', port: 0 },
    dataDir,
    supervisorTick: '100ms',
    geoip: { enabled: false },
    nodeGroups: options.groups ?? [staticGroup()],
    ...options.config,
    auth: { ...(fromEnv ? {} : { adminPasswordHash: ADMIN_PASSWORD_HASH }), ...(options.config?.auth as object | undefined) },
  };
  const env: Record<string, string> = { SWITCHYARD_JWT_SECRET: JWT_SECRET, ...options.env };
  const password = fromEnv ? env.SWITCHYARD_ADMIN_PASSWORD : ADMIN_PASSWORD;
  const config = parseConfig(raw, 'test', env);
  const service = await startService(config, { log: options.log ?? createLogger(process.env.TEST_LOG ?? 'silent'), orphanTimeoutMs: 60_000, ...options });
  const url = service.url;
  let adminToken = '';
  if (!options.noLogin && password) {
    const r = await request(url, 'POST', '/as/v1/auth/login', { username: config.auth.adminUser, password });
    adminToken = (r.json as { accessToken: string }).accessToken;
  }
  const authed = (token: string | null | undefined, headers: Record<string, string> = {}) => (token === null ? headers : { authorization: `Bearer ${token ?? adminToken}`, ...headers });
  return {
    url,
    dataDir,
    config,
    service,
    adminToken,
    // The service's own: node tokens are right whatever key or algorithm the test configured.
    signer: service.services.signer,
    get: (path, token, headers) => request(url, 'GET', path, undefined, authed(token, headers)),
    send: (method, path, body, token, headers) => request(url, method, path, body, authed(token, headers)),
    async close(closeOptions) {
      await service.close(closeOptions);
      killAgentsOf(dataDir);
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Stops every node agent started for a data directory (after a kill -9 of the service, say), and
 * the media servers they ran: an nginx master names its node's directory on its command line and
 * leads its own process group (its worker, and the ffmpeg a worker execs, go with it).
 */
export function killAgentsOf(dataDir: string): number {
  let killed = 0;
  const nodes = `${join(dataDir, 'nodes')}/`;
  for (const entry of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      const pid = Number(entry);
      // Agents of the local platform (nodes/) and of the Terraform local module (terraform-nodes/).
      if (readFileSync(`/proc/${entry}/environ`, 'utf8').includes(`SWITCHYARD_NODE_DIR=${dataDir}/`)) {
        process.kill(pid, 'SIGKILL');
        killed++;
        continue;
      }
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const pgid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
      if (pgid === pid && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(nodes)) {
        process.kill(-pid, 'SIGKILL');
        killed++;
      }
    } catch {
      /* gone, or not ours to read */
    }
  }
  return killed;
}

/** An actor host over `dataDir` with `groups` started; stopped, and the directory removed, when the test ends. */
export async function hostOf(
  t: ExecutionContext,
  dataDir: string,
  groups: readonly NodeGroup[],
  onEvents: (events: EventBody[]) => void = () => {},
  /** The first group starts on a thread started early, as the service's does (actors/spare.ts). */
  preloaded = false,
): Promise<ActorHost> {
  const h = new ActorHost({ dataDir, durability: 'commit', onEvents, ...(preloaded ? { preloaded: ActorHost.preload(false, (err) => t.log(err)) } : {}) });
  t.teardown(async () => {
    await h.stop(false);
    rmSync(dataDir, { recursive: true, force: true });
  });
  await h.startGroups(groups);
  return h;
}
