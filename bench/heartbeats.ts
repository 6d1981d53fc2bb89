// Bench 3: heartbeat ingestion. Node events from a separate load-generator process, alone and
// while the subscribe-lookup load runs: heartbeats absorbed per second, and how far lookups fall
// from their unloaded rate measured in the same run.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TokenSigner } from '../src/auth/tokens.js';
import { projectPath } from '../src/paths.js';
import { load } from './lib/load.js';
import { BENCH_PASSWORD, BENCH_SECRET, switchyard } from './lib/servers.js';
import { pct, table } from './lib/table.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const NODES = 1000;

function heartbeatLoad(url: string, connections: number, pipelining = 1): Promise<{ rps: number; p99: number; errors: number; non2xx: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [projectPath('dist', 'bench', 'lib', 'heartbeat-load.js'), url, String(NODES), String(connections), String(SECONDS), String(pipelining)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1)!)) : reject(new Error(`heartbeat load exited with ${code}`))));
  });
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-heartbeats-'));
  const sy = await switchyard(dir, { origins: 4, edges: NODES });
  try {
    const signer = new TokenSigner(Buffer.from(BENCH_SECRET));
    const post = async (path: string, body: unknown, token?: string) =>
      (await fetch(sy.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) })).json();
    for (let i = 0; i < 4; i++) await post(`/as/v1/nodes/o${i}/events`, { ready: true, metrics: {} }, signer.nodeToken('bench', `o${i}`, 3_600_000));
    const token = ((await post('/as/v1/auth/login', { username: 'admin', password: BENCH_PASSWORD })) as { accessToken: string }).accessToken;
    const headers = { authorization: `Bearer ${token}` };
    // Every edge in service, then a live stream to subscribe to.
    await heartbeatLoad(sy.url, 16).catch(() => undefined);
    const origin = (await (await fetch(`${sy.url}/as/v1/streams/live/live1/publish`, { headers })).json()) as { nodeId: string };
    await post(`/as/v1/nodes/${origin.nodeId}/events`, { ready: true, metrics: {}, streams: [{ name: 'live1', publishing: true }] }, signer.nodeToken('bench', origin.nodeId, 3_600_000));
    const lookups = () => load('subscribe', { url: sy.url, path: '/as/v1/streams/live/live1/subscribe', connections: 64, seconds: SECONDS, headers });

    const alone = await lookups();
    const hbAlone = await heartbeatLoad(sy.url, 64);
    const hbPipelined = await heartbeatLoad(sy.url, 16, 8);
    const [both, hbBoth] = await Promise.all([lookups(), heartbeatLoad(sy.url, 32)]);
    console.log(`\nHeartbeat ingestion (${NODES} nodes posting events; ${SECONDS} s per run; loads from two separate processes)\n`);
    console.log(
      table(
        ['run', 'heartbeats/s', 'heartbeat p99 ms', 'lookups/s', 'lookups vs unloaded', 'errors'],
        [
          ['lookups alone (64 connections)', '-', '-', alone.rps, '100 %', alone.errors + alone.non2xx],
          ['heartbeats alone (64 connections)', hbAlone.rps, hbAlone.p99, '-', '-', hbAlone.errors + hbAlone.non2xx],
          ['heartbeats alone (16 connections, 8 pipelined)', hbPipelined.rps, hbPipelined.p99, '-', '-', hbPipelined.errors + hbPipelined.non2xx],
          ['both (lookups 64, heartbeats 32 connections)', hbBoth.rps, hbBoth.p99, both.rps, pct(both.rps, alone.rps), both.errors + both.non2xx + hbBoth.errors + hbBoth.non2xx],
        ],
      ),
    );
    console.log('\nGoal: 50k heartbeats/s with lookups at ≥ 70 % of their unloaded rate.');
  } finally {
    await sy.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
