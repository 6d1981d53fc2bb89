// Bench 5: failover on the local platform. From a node agent's kill -9 to the node leaving
// rotation (FAULT), and from there to its replacement in service. The same run measures the
// floor for each: nodeTimeout itself, and how long a fresh node takes from REQUESTED to INSERVICE.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EventRecord } from '../src/domain/events.js';
import { openEvents } from '../src/events/stream-client.js';
import { projectPath } from '../src/paths.js';
import { adminToken, BENCH_PASSWORD, benchConfig, runServer } from './lib/servers.js';
import { table } from './lib/table.js';
import { localGroup } from '../test/helpers/fixtures.js';
import { killAgentsOf } from '../test/helpers/service.js';

const NODE_TIMEOUT = Number(process.env.BENCH_NODE_TIMEOUT_MS ?? 3000);
const TRIALS = Number(process.env.BENCH_TRIALS ?? 3);

/** Follows the event stream from the start; `wait` resolves at the first event set that satisfies a test. */
function follow(url: string, token: string) {
  const seen: EventRecord[] = [];
  const waiters: Array<{ done: (s: EventRecord[]) => EventRecord | undefined; resolve: (e: EventRecord) => void }> = [];
  const controller = new AbortController();
  void (async () => {
    for await (const e of await openEvents(url, token, { since: 0, signal: controller.signal })) {
      seen.push(e);
      for (const w of [...waiters]) {
        const hit = w.done(seen);
        if (hit) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(hit);
        }
      }
    }
  })().catch(() => {});
  return {
    seen,
    wait: (done: (s: EventRecord[]) => EventRecord | undefined, timeoutMs = 60_000) =>
      new Promise<EventRecord>((resolve, reject) => {
        const hit = done(seen);
        if (hit) return resolve(hit);
        const timer = setTimeout(() => reject(new Error('timed out waiting for an event')), timeoutMs);
        waiters.push({
          done,
          resolve: (e) => {
            clearTimeout(timer);
            resolve(e);
          },
        });
      }),
    stop: () => controller.abort(),
  };
}

const state = (e: EventRecord) => e as Extract<EventRecord, { type: 'node.state' }>;

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-failover-'));
  const config = benchConfig(dir, {
    geoip: { enabled: false },
    nodeGroups: [
      localGroup({
        name: 'bench',
        firstAddress: '127.0.40.2',
        regions: [{ name: 'r1', lat: 50, lon: 8 }],
        // No limit given: the config's default, as before.
        origins: { min: 1, max: 2, limit: undefined },
        edges: { min: 2, max: 4, limit: undefined },
        timing: { heartbeatMs: 1000, nodeTimeout: NODE_TIMEOUT, faultTimeout: '1s' },
      }),
    ],
  });
  const sy = await runServer(projectPath('dist', 'src', 'main.js'), { SWITCHYARD_CONFIG: config, SWITCHYARD_ADMIN_PASSWORD: BENCH_PASSWORD });
  try {
    const token = await adminToken(sy.url);
    const events = follow(sy.url, token);
    const inService = (s: EventRecord[]) => {
      const last = new Map<string, string | null>();
      for (const e of s) if (e.type === 'node.state') last.set(state(e).nodeId, state(e).to);
      return [...last].filter(([, st]) => st === 'INSERVICE').map(([id]) => id);
    };
    await events.wait((s) => (inService(s).length >= 3 ? s.at(-1) : undefined));
    // A fresh node's start, from its request to its first ready heartbeat.
    const starts = new Map<string, number>();
    const coldStarts: number[] = [];
    for (const e of events.seen) {
      if (e.type !== 'node.state') continue;
      if (state(e).to === 'REQUESTED') starts.set(state(e).nodeId, e.at);
      if (state(e).to === 'INSERVICE' && starts.has(state(e).nodeId)) coldStarts.push(e.at - starts.get(state(e).nodeId)!);
    }
    const rows: Array<[number, number, number]> = [];
    for (let trial = 0; trial < TRIALS; trial++) {
      const detail = (await (await fetch(`${sy.url}/as/v1/nodegroups/bench`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
        nodeList: Array<{ id: string; role: string; state: string; platform: { pid?: number } }>;
      };
      const victim = detail.nodeList.find((n) => n.role === 'edge' && n.state === 'INSERVICE' && n.platform.pid)!;
      const killedAt = Date.now();
      process.kill(victim.platform.pid!, 'SIGKILL');
      const fault = await events.wait((s) => s.find((e) => e.type === 'node.state' && state(e).nodeId === victim.id && state(e).to === 'FAULT'));
      const replacement = await events.wait((s) =>
        s.find((e) => e.type === 'node.state' && state(e).to === 'INSERVICE' && e.at > fault.at && state(e).role === 'edge' && state(e).nodeId !== victim.id && state(e).from !== 'FAULT'),
      );
      rows.push([fault.at - killedAt, replacement.at - fault.at, killedAt]);
    }
    events.stop();
    const cold = coldStarts.reduce((a, b) => a + b, 0) / Math.max(1, coldStarts.length);
    console.log(`\nFailover on the local platform (nodeTimeout ${NODE_TIMEOUT} ms, heartbeat every 1000 ms; ${TRIALS} kills of an edge agent)\n`);
    console.log(
      table(
        ['trial', 'kill → FAULT (out of rotation)', 'minus nodeTimeout', 'FAULT → replacement INSERVICE', 'fresh node start (same run)'],
        rows.map(([fault, replace], i) => [i + 1, `${fault} ms`, `${fault - NODE_TIMEOUT} ms`, `${replace} ms`, `${Math.round(cold)} ms`]),
      ),
    );
    console.log(`\nGoals: kill → FAULT ≤ nodeTimeout + 500 ms; FAULT → replacement ≤ 3000 ms.`);
  } finally {
    await sy.stop();
    // Agents the service started are its own; any left by a failure are stopped here.
    killAgentsOf(join(dir, 'data'));
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
