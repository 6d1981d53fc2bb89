// Bench 3: heartbeat ingestion. Node events from a separate load-generator process, alone and
// while the subscribe-lookup load runs: heartbeats absorbed per second, and how far lookups fall
// from their unloaded rate measured in the same run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TokenSigner } from '../src/auth/tokens.js';
import { heartbeatLoad, type HeartbeatResult, type RunningLoad } from './lib/heartbeat-load.js';
import { load, type LoadResult } from './lib/load.js';
import { BENCH_PASSWORD, BENCH_NODE_TOKEN_TTL, BENCH_SECRET, switchyard } from './lib/servers.js';
import { pct, table } from './lib/table.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const NODES = 1000;
/** Heartbeats per second offered over the node channels while the lookup load runs. */
const RATES = [10_000, 25_000, 50_000];

/** The lookup load, started once the heartbeat load runs, and both results. */
async function alongside(lookups: () => Promise<LoadResult>, hb: RunningLoad): Promise<[LoadResult, HeartbeatResult]> {
  await hb.ready;
  return Promise.all([lookups(), hb.result]);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-heartbeats-'));
  const sy = await switchyard(dir, { origins: 4, edges: NODES });
  try {
    const signer = new TokenSigner(Buffer.from(BENCH_SECRET));
    const post = async (path: string, body: unknown, token?: string) =>
      (await fetch(sy.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) })).json();
    for (let i = 0; i < 4; i++) await post(`/as/v1/nodes/o${i}/events`, { ready: true, metrics: {} }, signer.nodeToken('bench', `o${i}`, BENCH_NODE_TOKEN_TTL));
    const token = ((await post('/as/v1/auth/login', { username: 'admin', password: BENCH_PASSWORD })) as { accessToken: string }).accessToken;
    const headers = { authorization: `Bearer ${token}` };
    // Every edge in service, then a live stream to subscribe to.
    await heartbeatLoad(sy.url, { nodes: NODES, connections: 16, seconds: SECONDS }).result.catch(() => undefined);
    const origin = (await (await fetch(`${sy.url}/as/v1/streams/live/live1/publish`, { headers })).json()) as { nodeId: string };
    await post(`/as/v1/nodes/${origin.nodeId}/events`, { ready: true, metrics: {}, streams: [{ name: 'live1', publishing: true }] }, signer.nodeToken('bench', origin.nodeId, BENCH_NODE_TOKEN_TTL));
    const lookups = () => load('subscribe', { url: sy.url, path: '/as/v1/streams/live/live1/subscribe', connections: 64, seconds: SECONDS, headers });

    const alone = await lookups();
    const http = { nodes: NODES, seconds: SECONDS, transport: 'http' as const };
    const channels = { nodes: NODES, connections: NODES, seconds: SECONDS, transport: 'channel' as const };
    const hbAlone = await heartbeatLoad(sy.url, { ...http, connections: 64 }).result;
    const hbPipelined = await heartbeatLoad(sy.url, { ...http, connections: 16, pipelining: 8 }).result;
    const [both, hbBoth] = await alongside(lookups, heartbeatLoad(sy.url, { ...http, connections: 32 }));
    const chAlone = await heartbeatLoad(sy.url, channels).result;
    const offered: Array<[number, LoadResult, HeartbeatResult]> = [];
    for (const rate of RATES) offered.push([rate, ...(await alongside(lookups, heartbeatLoad(sy.url, { ...channels, rate })))]);
    console.log(`\nHeartbeat ingestion (${NODES} nodes; ${SECONDS} s per run; loads from two separate processes)\n`);
    const row = (name: string, hb: HeartbeatResult | null, lk: LoadResult | null) => [
      name,
      hb ? hb.rps : '-',
      hb ? hb.p99 : '-',
      lk ? lk.rps : '-',
      lk ? pct(lk.rps, alone.rps) : '-',
      (hb ? hb.errors + hb.non2xx : 0) + (lk ? lk.errors + lk.non2xx : 0),
    ];
    console.log(
      table(
        ['run', 'heartbeats/s', 'heartbeat p99 ms', 'lookups/s', 'lookups vs unloaded', 'errors'],
        [
          row('lookups alone (64 connections)', null, alone),
          row('heartbeats alone, HTTP (64 connections)', hbAlone, null),
          row('heartbeats alone, HTTP (16 connections, 8 pipelined)', hbPipelined, null),
          row('both, HTTP (lookups 64, heartbeats 32 connections)', hbBoth, both),
          row(`heartbeats alone, node channels (${NODES} WebSockets, as fast as answered)`, chAlone, null),
          ...offered.map(([rate, lk, hb]) => row(`both, node channels (lookups 64; ${rate / 1000}k events/s offered)`, hb, lk)),
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
