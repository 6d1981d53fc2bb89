// Crash consistency (issue 6.1): the real service as a child process takes a mixed load of
// acknowledged writes (provisions, node group changes, publish lookups that bind streams, password
// changes) and of answers that reveal what a write in flight is writing (a second publish lookup
// of a stream being bound, a read of a provision being written), and is killed with SIGKILL at a
// random moment; sometimes while it is still starting. Between runs its LMDB file is opened
// directly and checked for consistency; after each restart every write that got a 2xx, and every
// value an answer revealed, must be there (torture-keys.ts). A write whose answer was cut off by
// the kill may or may not be there: both are right, so it widens what the next check accepts for
// its key. A client follows the event stream through every run, resuming with Last-Event-ID, and
// the log is checked against what it was sent (torture-events.ts).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TokenSigner } from '../../src/auth/tokens.js';
import { normalizeNodeGroup } from '../../src/config/node-group.js';
import { NODE_STATES } from '../../src/domain/vocabulary.js';
import type { BindingRecord, NodeRecord } from '../../src/domain/records.js';
import { ProvisionBody } from '../../src/schemas/api.js';
import { compile } from '../../src/schemas/validate.js';
import { openStore, type GroupKey } from '../../src/store/store.js';
import { request, type Reply } from '../helpers/http.js';
import { launchService, type LaunchedService } from '../helpers/process.js';
import { EventWatch } from './torture-events.js';
import { Key } from './torture-keys.js';

export interface TortureOptions {
  cycles: number;
  seed?: number;
  /** Concurrent clients writing during a cycle. */
  workers?: number;
  /** Longest run of load before the kill, in ms (the moment is uniform below it). */
  maxLoadMs?: number;
  log?: (line: string) => void;
}

export interface CycleReport {
  cycle: number;
  /** 'load' (killed under load) or 'start' (killed while starting). */
  killed: 'load' | 'start';
  killAfterMs: number;
  acknowledged: number;
  /** Answers that revealed a key being written (or read it back), each checked like an acknowledgement. */
  revealed: number;
  cutOff: number;
  refused: number;
  checked: number;
}

export interface TortureReport {
  seed: number;
  cycles: CycleReport[];
  /** Acknowledged writes, or revealed values, missing after a restart (or contradicted by an answer): must be empty. */
  losses: string[];
  /** Broken invariants found in the store between runs: must be empty. */
  inconsistencies: string[];
  /** Events sent to the following client that the log contradicts, ids sent twice or out of order, events skipped: must be empty. */
  eventProblems: string[];
  /** Events the following client received, over every run. */
  eventsReceived: number;
}

const ADMIN_PASSWORD = 'torture-initial-password';
const SECRET = 'torture-secret-that-is-at-least-32-bytes';
const NODES = [
  { id: 'o1', role: 'origin', region: 'r1' },
  { id: 'o2', role: 'origin', region: 'r1' },
  { id: 'o3', role: 'origin', region: 'r2' },
  { id: 'e1', role: 'edge', region: 'r1' },
  { id: 'e2', role: 'edge', region: 'r2' },
] as const;
const PROVISIONS = 12;
const STREAMS = 40;
const GROUPS = 4;

/** A small seeded generator, so that a failing run can be replayed (timing aside). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function configFile(dataDir: string): object {
  return {
    server: { host: '127.0.0.1', port: 0, shutdownTimeout: '2s' },
    dataDir,
    supervisorTick: '100ms',
    geoip: { enabled: false },
    auth: { loginThrottle: { maxFailures: 1_000_000 } },
    nodeGroups: [
      {
        name: 'g',
        platform: { type: 'static', static: { nodes: NODES.map((n, i) => ({ ...n, address: `10.0.0.${i + 1}` })) } },
        regions: [
          { name: 'r1', lat: 50, lon: 0 },
          { name: 'r2', lat: 40, lon: 20 },
        ],
        roles: { origin: { publish: { protocol: 'rtmp', port: 1935 } }, edge: { parentRole: 'origin', subscribe: { protocol: 'wss', port: 443 } } },
        rules: ['r1', 'r2'].flatMap((region) => [
          { region, role: 'origin', min: 0, max: 4, limit: 1e6 },
          { region, role: 'edge', min: 0, max: 4, limit: 1e6 },
        ]),
        // Nothing may time out between runs: what is checked is what was written.
        timing: { heartbeatMs: 1000, nodeTimeout: '1h', streamTimeout: '1h', publishTimeout: '1h' },
      },
    ],
  };
}

/** A node group made and changed through the API; `version` shows which write is stored. */
function groupSpec(name: string, version: number): object {
  return {
    name,
    platform: { type: 'static', static: { nodes: [{ id: `${name}-n1`, role: 'origin', region: 'x1', address: '10.9.0.1' }] } },
    regions: [{ name: 'x1', lat: 10, lon: 10 }],
    roles: { origin: {} },
    rules: [{ region: 'x1', role: 'origin', min: 0, max: 1, limit: 10 }],
    timing: { heartbeatMs: 1000 + version },
  };
}

function provisionSpec(name: string, version: number, region: 'r1' | 'r2'): object {
  const renditions = 1 + (version % 4);
  return {
    streamName: name,
    region,
    streams: Array.from({ length: renditions }, (_, i) => ({ name: `${name}_${i}`, level: i, videoBR: 100_000 + version, videoWidth: 640, videoHeight: 360, videoFPS: 30, audioBR: 64_000 })),
  };
}

type Running = LaunchedService;

function spawnService(configPath: string): Running {
  return launchService({ SWITCHYARD_CONFIG: configPath, SWITCHYARD_ADMIN_PASSWORD: ADMIN_PASSWORD, SWITCHYARD_JWT_SECRET: SECRET }, 200);
}

async function kill(r: Running): Promise<void> {
  if (r.proc.exitCode === null && r.proc.signalCode === null) r.proc.kill('SIGKILL');
  await r.exited;
}

/** Opens the LMDB file left by a killed service and lists every broken invariant in it. */
export async function checkStore(dataDir: string): Promise<string[]> {
  const problems: string[] = [];
  const store = openStore(dataDir);
  try {
    const groups = new Set<string>();
    for (const { key, value } of store.groups.getRange()) {
      groups.add(key as string);
      const n = normalizeNodeGroup(value.spec);
      if ('errors' in n) problems.push(`group ${String(key)}: its stored definition does not load: ${JSON.stringify(n.errors).slice(0, 200)}`);
      else if (n.group.name !== key) problems.push(`group ${String(key)} is stored under another name: ${n.group.name}`);
    }
    const nodes = new Set<string>();
    for (const { key, value } of store.nodes.getRange()) {
      const [group, id] = key as GroupKey;
      const node = value as NodeRecord;
      nodes.add(`${group}/${id}`);
      if (!groups.has(group)) problems.push(`node ${group}/${id} belongs to no stored group`);
      if (node.id !== id || node.group !== group) problems.push(`node ${group}/${id} is stored under another key: ${node.group}/${node.id}`);
      if (!NODE_STATES.includes(node.state)) problems.push(`node ${group}/${id} is in an unknown state ${String(node.state)}`);
    }
    for (const { key, value } of store.bindings.getRange()) {
      const [group, stream] = key as GroupKey;
      const b = value as BindingRecord;
      if (!groups.has(group)) problems.push(`binding ${group}/${stream} belongs to no stored group`);
      if (b.stream !== stream) problems.push(`binding ${group}/${stream} is stored under another key: ${b.stream}`);
      // A binding outlives the origin it names (until its own timeouts: docs/choosing-nodes.md); a transcoder
      // that is removed is forgotten at once.
      if (typeof b.origin !== 'string' || b.origin === '') problems.push(`binding ${group}/${stream} names no origin`);
      if (b.transcoder !== undefined && !nodes.has(`${group}/${b.transcoder}`)) problems.push(`binding ${group}/${stream} names an unknown transcoder ${b.transcoder}`);
    }
    const provision = compile(ProvisionBody);
    for (const { key, value } of store.provisions.getRange()) {
      const [group, stream] = key as GroupKey;
      const { createdAt, updatedAt, ...body } = value;
      if (!groups.has(group)) problems.push(`provision ${group}/${stream} belongs to no stored group`);
      if (!provision.check(body) || typeof createdAt !== 'number' || typeof updatedAt !== 'number') problems.push(`provision ${group}/${stream} is malformed: ${JSON.stringify(value).slice(0, 200)}`);
      else if (value.streamName !== stream) problems.push(`provision ${group}/${stream} is stored under another key`);
    }
    const admin = store.meta.get('user:admin') as { hash?: unknown; ver?: unknown } | undefined;
    if (admin && (typeof admin.hash !== 'string' || typeof admin.ver !== 'number')) problems.push('the admin user record is malformed');
  } finally {
    await store.close();
  }
  return problems;
}

export async function torture(options: TortureOptions): Promise<TortureReport> {
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const random = prng(seed);
  const log = options.log ?? (() => {});
  const workers = options.workers ?? 6;
  const maxLoadMs = options.maxLoadMs ?? 1500;
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-torture-'));
  const dataDir = join(dir, 'data');
  const configPath = join(dir, 'config.json');
  writeFileSync(configPath, JSON.stringify(configFile(dataDir)));
  const signer = new TokenSigner(Buffer.from(SECRET));
  const report: TortureReport = { seed, cycles: [], losses: [], inconsistencies: [], eventProblems: [], eventsReceived: 0 };
  const watch = new EventWatch();
  /** After a kill (or the last stop): the store's invariants, and its event log against what was sent. */
  const checkRun = async (cycle: number) => {
    report.inconsistencies.push(...(await checkStore(dataDir)).map((p) => `after cycle ${cycle}: ${p}`));
    report.eventProblems.push(...[...(await watch.stop()), ...(await watch.check(dataDir))].map((p) => `after cycle ${cycle}: ${p}`));
    report.eventsReceived = watch.received;
  };
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;

  const provisions = Array.from({ length: PROVISIONS }, (_, i) => new Key(`p${i}`, 'absent'));
  const streams = Array.from({ length: STREAMS }, (_, i) => new Key(`s${i}`, 'absent'));
  const groups = Array.from({ length: GROUPS }, (_, i) => new Key(`t${i}`, 'absent'));
  const password = new Key('password', ADMIN_PASSWORD);
  let version = 0;

  try {
    // cycles + 1 starts: the last one only checks what the last kill left, then stops cleanly.
    for (let cycle = 1; cycle <= options.cycles + 1; cycle++) {
      const last = cycle > options.cycles;
      const run = spawnService(configPath);
      const stats: CycleReport = { cycle, killed: 'load', killAfterMs: 0, acknowledged: 0, revealed: 0, cutOff: 0, refused: 0, checked: 0 };
      try {
        // One run in six is killed while it starts: LMDB open, user seeding, actors loading.
        if (!last && cycle > 1 && random() < 1 / 6) {
          stats.killed = 'start';
          stats.killAfterMs = Math.floor(random() * 600);
          await Promise.race([new Promise((r) => setTimeout(r, stats.killAfterMs)), run.exited]);
          await kill(run);
          report.cycles.push(stats);
          await checkRun(cycle);
          log(`cycle ${cycle}: killed while starting, after ${stats.killAfterMs} ms`);
          continue;
        }
        const url = await run.url;
        const call = (method: string, path: string, body?: unknown, token?: string) => request(url, method, path, body, token ? { authorization: `Bearer ${token}` } : {});
        // ---- what the last run acknowledged must be here ------------------------------------
        let current = '';
        let token = '';
        for (const candidate of password.allowed) {
          const r = await call('POST', '/as/v1/auth/login', { username: 'admin', password: candidate });
          if (r.status === 200) {
            current = candidate;
            token = (r.json as { accessToken: string }).accessToken;
            break;
          }
        }
        stats.checked++;
        if (!token) throw new Error(`cycle ${cycle}: no acknowledged admin password works (tried ${password.allowed.size})`);
        password.acknowledged(current);
        const loss = (key: Key, seen: string) => {
          report.losses.push(`cycle ${cycle}: ${key.name} is ${seen}; acknowledged or in flight: ${[...key.allowed].join(' | ')}`);
        };

        for (const key of provisions) {
          const r = await call('GET', `/as/v1/provision/g/${key.name}`, undefined, token);
          const seen = r.status === 404 ? 'absent' : `${(r.json as { region: string }).region}:${(r.json as { streams: Array<{ videoBR: number }> }).streams[0]!.videoBR - 100_000}`;
          if (r.status !== 200 && r.status !== 404) throw new Error(`reading provision ${key.name}: ${r.status} ${r.text}`);
          if (!key.allowed.has(seen)) loss(key, seen);
          key.acknowledged(seen);
          stats.checked++;
        }
        const bound = new Map<string, string>();
        for (let after: string | undefined, page = 0; page < 100; page++) {
          const r = await call('GET', `/as/v1/streams?nodeGroup=g&limit=1000${after ? `&after=${after}` : ''}`, undefined, token);
          const list = r.json as Array<{ name: string; origin: { nodeId: string } }>;
          for (const s of list) bound.set(s.name, s.origin.nodeId);
          if (list.length < 1000) break;
          after = list.at(-1)!.name;
        }
        for (const key of streams) {
          const seen = bound.get(key.name) ?? 'absent';
          if (!key.admits(seen)) loss(key, seen);
          key.acknowledged(seen);
          stats.checked++;
        }
        for (const key of groups) {
          const r = await call('GET', `/as/v1/nodegroups/${key.name}`, undefined, token);
          const body = r.json as { status?: string; config?: { timing: { heartbeatMs: number } } };
          const seen = r.status === 404 ? 'absent' : body.status === 'deleting' ? 'deleting' : `v${body.config!.timing.heartbeatMs - 1000}`;
          if (r.status !== 200 && r.status !== 404) throw new Error(`reading node group ${key.name}: ${r.status} ${r.text}`);
          if (!key.allowed.has(seen)) loss(key, seen);
          // A group being deleted finishes in the background.
          if (seen === 'deleting') key.acknowledged('deleting', 'absent');
          else key.acknowledged(seen);
          stats.checked++;
        }

        watch.start(url, token);
        if (last) {
          run.proc.kill('SIGTERM');
          await run.exited;
          if (run.proc.exitCode !== 0) throw new Error(`the last run did not stop cleanly: exit ${run.proc.exitCode} ${run.proc.signalCode ?? ''}`);
          await checkRun(cycle);
          log(`final start: ${stats.checked} keys checked, stopped cleanly; ${watch.received} events followed over every run`);
          break;
        }

        // ---- the nodes are in service, then the load runs until the kill --------------------
        for (const n of NODES) {
          const r = await call('POST', `/as/v1/nodes/${n.id}/events`, { ready: true, metrics: {}, streams: [] }, signer.nodeToken('g', n.id, 3_600_000));
          if (r.status !== 200) throw new Error(`heartbeat of ${n.id}: ${r.status} ${r.text}`);
        }

        let killed = false;
        let relogin: Promise<void> | null = null;
        const refreshToken = () =>
          (relogin ??= (async () => {
            const r = await call('POST', '/as/v1/auth/login', { username: 'admin', password: password.value });
            if (r.status === 200) token = (r.json as { accessToken: string }).accessToken;
          })()
            // A failed login leaves the old token: the next request is refused and tries again.
            .catch(() => {})
            .finally(() => (relogin = null)));

        /** Runs one write: a 2xx acknowledges, a 4xx refuses, a cut-off answer is in flight. */
        const write = async (key: Key, send: () => Promise<Reply>, onAck: (r: Reply) => string[], ifCut: string[]) => {
          key.busy = true;
          key.writes(ifCut);
          try {
            const r = await send();
            if (r.status >= 200 && r.status < 300) {
              key.acknowledged(...onAck(r));
              stats.acknowledged++;
            } else if (r.status === 401) {
              await refreshToken();
              stats.refused++;
            } else if (r.status >= 500) {
              throw new Error(`${key.name}: ${r.status} ${r.text}`);
            } else stats.refused++;
          } catch (err) {
            if (!killed) throw err;
            key.cutOff(...ifCut);
            stats.cutOff++;
          } finally {
            key.busy = false;
            key.writing = null;
          }
        };

        /** Runs one read of a key (written concurrently, or not): what it answers is durable, so it is checked as an acknowledgement is. */
        const reveal = async (key: Key, send: () => Promise<Reply>, seen: (r: Reply) => string | null) => {
          const read = key.reading();
          try {
            const r = await send();
            if (r.status === 401) return void (await refreshToken());
            if (r.status >= 500) throw new Error(`${key.name}: ${r.status} ${r.text}`);
            const value = seen(r);
            if (value === null) return;
            stats.revealed++;
            if (!key.revealed(read, value))
              report.losses.push(
                `cycle ${cycle}: an answer showed ${key.name} as ${value}; acknowledged or being written: ${[...key.allowed].join(' | ')}${key.writing ? ` | ${key.writing.join(' | ')}` : ''}`,
              );
          } catch (err) {
            // Cut off by the kill: it revealed nothing.
            if (!killed) throw err;
          }
        };
        const provisionSeen = (r: Reply) =>
          r.status === 404 ? 'absent' : r.status === 200 ? `${(r.json as { region: string }).region}:${(r.json as { streams: Array<{ videoBR: number }> }).streams[0]!.videoBR - 100_000}` : null;

        const one = async () => {
          // Every pass yields to the event loop, so that a worker with nothing free cannot starve
          // the timer that ends the run.
          await new Promise((r) => setImmediate(r));
          const kind = random();
          const free = (keys: Key[]) => keys.filter((k) => !k.busy);
          const busy = (keys: Key[]) => keys.filter((k) => k.busy);
          if (kind < 0.15) {
            // A second publish lookup of a stream another worker is binding (a publish of a stream
            // nobody binds would write, not reveal), or a read of a provision, written or not.
            if (random() < 0.5) {
              const key = busy(streams).length ? pick(busy(streams)) : null;
              if (key)
                await reveal(
                  key,
                  () => call('GET', `/as/v1/streams/live/${key.name}/publish`, undefined, token),
                  (r) => (r.status === 200 ? (r.json as { nodeId: string }).nodeId : null),
                );
            } else {
              const key = busy(provisions).length && random() < 0.7 ? pick(busy(provisions)) : pick(provisions);
              await reveal(key, () => call('GET', `/as/v1/provision/g/${key.name}`, undefined, token), provisionSeen);
            }
          } else if (kind < 0.5) {
            const key = pick(free(provisions).length ? free(provisions) : provisions);
            if (key.busy) return;
            const v = ++version;
            const region = random() < 0.5 ? 'r1' : 'r2';
            if (key.value === 'absent')
              await write(
                key,
                () => call('POST', '/as/v1/provision/g', provisionSpec(key.name, v, region), token),
                () => [`${region}:${v}`],
                [`${region}:${v}`],
              );
            else if (random() < 0.3)
              await write(
                key,
                () => call('DELETE', `/as/v1/provision/g/${key.name}`, undefined, token),
                () => ['absent'],
                ['absent'],
              );
            else
              await write(
                key,
                () => call('PUT', `/as/v1/provision/g/${key.name}`, provisionSpec(key.name, v, region), token),
                () => [`${region}:${v}`],
                [`${region}:${v}`],
              );
          } else if (kind < 0.8) {
            const key = pick(free(streams).length ? free(streams) : streams);
            if (key.busy) return;
            await write(
              key,
              () => call('GET', `/as/v1/streams/live/${key.name}/publish`, undefined, token),
              (r) => [(r.json as { nodeId: string }).nodeId],
              ['any'],
            );
          } else if (kind < 0.97) {
            const key = pick(free(groups).length ? free(groups) : groups);
            if (key.busy) return;
            const v = ++version;
            // A group still being deleted refuses its name (409) until it is gone.
            if (key.value === 'absent' || key.value === 'deleting')
              await write(
                key,
                () => call('POST', '/as/v1/nodegroups', groupSpec(key.name, v), token),
                () => [`v${v}`],
                [`v${v}`],
              );
            else if (random() < 0.4)
              await write(
                key,
                () => call('DELETE', `/as/v1/nodegroups/${key.name}`, undefined, token),
                () => ['deleting', 'absent'],
                ['deleting', 'absent'],
              );
            else
              await write(
                key,
                () => call('PUT', `/as/v1/nodegroups/${key.name}`, groupSpec(key.name, v), token),
                () => [`v${v}`],
                [`v${v}`],
              );
          } else if (!password.busy) {
            const next = `torture-password-${++version}`;
            const before = password.value;
            await write(
              password,
              () => call('POST', '/as/v1/auth/password', { currentPassword: before, newPassword: next }, token),
              () => [next],
              [next],
            );
            if (password.value === next) await refreshToken();
          }
        };

        stats.killAfterMs = Math.floor(50 + random() * maxLoadMs);
        let failure: unknown = null;
        const load = Array.from({ length: workers }, async () => {
          while (!killed && !failure) await one().catch((err: unknown) => (failure ??= err));
        });
        await new Promise((r) => setTimeout(r, stats.killAfterMs));
        killed = true;
        await kill(run);
        await Promise.all(load);
        if (failure) throw failure;
        report.cycles.push(stats);
        await checkRun(cycle);
        log(
          `cycle ${cycle}: killed after ${stats.killAfterMs} ms of load; ${stats.acknowledged} acknowledged, ${stats.revealed} revealed, ${stats.cutOff} cut off, ${stats.refused} refused; ${stats.checked} keys checked`,
        );
      } catch (err) {
        await kill(run);
        throw new Error(`${(err as Error).message}\n--- service output ---\n${run.output.slice(-30).join('\n')}`);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return report;
}
