// Bench 1: lookup throughput and latency. An authenticated subscribe lookup of a live stream and
// a publish lookup of a new stream (a binding written to LMDB before the answer), against a bare
// node:http server and a bare Koa route answering the same JSON, measured in the same run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TokenSigner } from '../src/auth/tokens.js';
import { load, type LoadResult } from './lib/load.js';
import { BENCH_PASSWORD, BENCH_NODE_TOKEN_TTL, BENCH_SECRET, baseline, switchyard } from './lib/servers.js';
import { pct, table } from './lib/table.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = (process.env.BENCH_CONNECTIONS ?? '16,64,256').split(',').map(Number);

async function post(url: string, path: string, body: unknown, token?: string): Promise<unknown> {
  const res = await fetch(url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-'));
  const results: LoadResult[] = [];
  try {
    for (const name of ['bare-http', 'bare-koa'] as const) {
      const server = await baseline(name);
      for (const c of CONNECTIONS) results.push(await load(name, { url: server.url, path: '/as/v1/streams/live/cam/subscribe', connections: c, seconds: SECONDS }));
      await server.stop();
    }

    const sy = await switchyard(dir, { origins: 4, edges: 8 });
    const signer = new TokenSigner(Buffer.from(BENCH_SECRET));
    const beat = (id: string, streams: unknown[] = []) => post(sy.url, `/as/v1/nodes/${id}/events`, { ready: true, metrics: {}, streams }, signer.nodeToken('bench', id, BENCH_NODE_TOKEN_TTL));
    for (let i = 0; i < 4; i++) await beat(`o${i}`);
    for (let i = 0; i < 8; i++) await beat(`e${i}`);
    const token = ((await post(sy.url, '/as/v1/auth/login', { username: 'admin', password: BENCH_PASSWORD })) as { accessToken: string }).accessToken;
    const headers = { authorization: `Bearer ${token}` };
    const origin = (await (await fetch(`${sy.url}/as/v1/streams/live/live1/publish`, { headers })).json()) as { nodeId: string };
    await beat(origin.nodeId, [{ name: 'live1', publishing: true }]);

    for (const c of CONNECTIONS) results.push(await load('subscribe', { url: sy.url, path: '/as/v1/streams/live/live1/subscribe', connections: c, seconds: SECONDS, headers }));
    let n = 0;
    for (const c of CONNECTIONS) {
      results.push(await load('publish (new stream)', { url: sy.url, path: '/', nextPath: () => `/as/v1/streams/live/s${c}-${n++}/publish`, connections: c, seconds: SECONDS, headers }));
    }
    // A storm against a full group: every origin reports its limit, so each new stream is a
    // 503 NO_CAPACITY (with Retry-After, and a scale-out asked for). It must cost no more than a 200.
    for (let i = 0; i < 4; i++) await post(sy.url, `/as/v1/nodes/o${i}/events`, { ready: true, metrics: { 'connections.publisher': 1e12 } }, signer.nodeToken('bench', `o${i}`, BENCH_NODE_TOKEN_TTL));
    for (const c of CONNECTIONS) {
      results.push(await load('publish, group full (503)', { url: sy.url, path: '/', nextPath: () => `/as/v1/streams/live/full${c}-${n++}/publish`, connections: c, seconds: SECONDS, headers }));
    }
    await sy.stop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  const koa = new Map(results.filter((r) => r.label === 'bare-koa').map((r) => [r.connections, r.rps]));
  const ok = new Map(results.filter((r) => r.label === 'subscribe').map((r) => [r.connections, r.rps]));
  console.log(`\nLookup throughput and latency (${SECONDS} s per run; autocannon in the bench process, each server its own process)\n`);
  console.log(
    table(
      ['server', 'connections', 'req/s', 'vs bare Koa', 'vs subscribe (200)', 'p50 ms', 'p99 ms', 'errors', 'non-2xx'],
      results.map((r) => [
        r.label,
        r.connections,
        r.rps,
        pct(r.rps, koa.get(r.connections)!),
        ok.has(r.connections) && !r.label.startsWith('bare') ? pct(r.rps, ok.get(r.connections)!) : '',
        r.p50,
        r.p99,
        r.errors,
        r.non2xx,
      ]),
    ),
  );
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
