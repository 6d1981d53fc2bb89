// Bench 6: actors across cores. The subscribe load spread over 1, 2 and 4 node groups (one actor
// thread each). Where a lookup's time goes, from the service's own metrics: CPU per lookup for the
// whole process and for the actors, the actors' round trip per batch, and the lookups per batch.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { TokenSigner } from '../src/auth/tokens.js';
import { projectPath } from '../src/paths.js';
import { BENCH_PASSWORD, BENCH_NODE_TOKEN_TTL, BENCH_SECRET, benchConfig, runServer } from './lib/servers.js';
import { table } from './lib/table.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const GROUPS = (process.env.BENCH_GROUPS ?? '1,2,4').split(',').map(Number);

function groupSpec(name: string) {
  const nodes = [
    { id: `${name}-o`, role: 'origin', region: 'r1', address: '10.0.0.1' },
    { id: `${name}-e1`, role: 'edge', region: 'r1', address: '10.0.0.2' },
    { id: `${name}-e2`, role: 'edge', region: 'r1', address: '10.0.0.3' },
  ];
  return {
    name,
    platform: { type: 'static', static: { nodes } },
    regions: [{ name: 'r1', lat: 50, lon: 8 }],
    roles: { origin: {}, edge: { parentRole: 'origin', subscribe: { protocol: 'wss', port: 443 } } },
    rules: [
      { region: 'r1', role: 'origin', min: 0, max: 9, limit: 1e12 },
      { region: 'r1', role: 'edge', min: 0, max: 9, limit: 1e12 },
    ],
    timing: { nodeTimeout: '1h', heartbeatMs: 600_000 },
    limits: { pendingBindings: 10_000_000, pendingPerToken: 10_000_000 },
  };
}

function scrape(text: string) {
  const one = (re: RegExp) => [...text.matchAll(re)].reduce((a, m) => a + Number(m[1]), 0);
  return {
    cpu: one(/^switchyard_process_cpu_seconds_total (\S+)$/gm),
    busy: one(/^switchyard_actor_busy_seconds_total\{[^}]*\} (\S+)$/gm),
    calls: one(/^switchyard_actor_call_duration_seconds_count\{method="lookups"\} (\S+)$/gm),
    callSeconds: one(/^switchyard_actor_call_duration_seconds_sum\{method="lookups"\} (\S+)$/gm),
    lookups: one(/^switchyard_lookup_duration_seconds_count\{[^}]*endpoint="live:subscribe"[^}]*\} (\S+)$/gm),
  };
}

async function run(count: number) {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-actors-'));
  const names = Array.from({ length: count }, (_, i) => `g${i}`);
  const config = benchConfig(dir, { geoip: { enabled: false }, limits: { lookups: { admin: { perSecond: 0, burst: 1 } } }, nodeGroups: names.map(groupSpec) });
  const sy = await runServer(projectPath('dist', 'src', 'main.js'), { SWITCHYARD_CONFIG: config, SWITCHYARD_ADMIN_PASSWORD: BENCH_PASSWORD, SWITCHYARD_JWT_SECRET: BENCH_SECRET });
  try {
    const signer = new TokenSigner(Buffer.from(BENCH_SECRET));
    const post = async (path: string, body: unknown, token?: string) =>
      (await fetch(sy.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) })).json();
    for (const g of names) for (const id of [`${g}-o`, `${g}-e1`, `${g}-e2`]) await post(`/as/v1/nodes/${id}/events`, { ready: true, metrics: {} }, signer.nodeToken(g, id, BENCH_NODE_TOKEN_TTL));
    const token = ((await post('/as/v1/auth/login', { username: 'admin', password: BENCH_PASSWORD })) as { accessToken: string }).accessToken;
    const headers = { authorization: `Bearer ${token}` };
    for (const g of names) await fetch(`${sy.url}/as/v1/streams/live/live1/publish?nodeGroup=${g}`, { headers });
    const metrics = async () => scrape(await (await fetch(`${sy.url}/as/v1/metrics`)).text());
    const before = await metrics();
    let n = 0;
    const r = await autocannon({
      url: sy.url,
      connections: 64,
      duration: SECONDS,
      headers,
      requests: [{ method: 'GET', path: '/', setupRequest: ((req: Record<string, unknown>) => ({ ...req, path: `/as/v1/streams/live/live1/subscribe?nodeGroup=${names[n++ % count]}` })) as never }],
    });
    const after = await metrics();
    const lookups = after.lookups - before.lookups;
    const calls = after.calls - before.calls;
    const us = (seconds: number) => Math.round((seconds * 1e6) / Math.max(1, lookups));
    return {
      groups: count,
      rps: Math.round(r.requests.average),
      p99: r.latency.p99,
      cpu: us(after.cpu - before.cpu),
      actor: us(after.busy - before.busy),
      roundTrip: ((after.callSeconds - before.callSeconds) / Math.max(1, calls)) * 1000,
      perBatch: lookups / Math.max(1, calls),
      errors: r.errors + r.non2xx,
    };
  } finally {
    await sy.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const rows = [];
  for (const g of GROUPS) rows.push(await run(g));
  const base = rows[0]!.rps;
  console.log(`\nActors across cores: subscribe lookups spread over node groups (one actor thread each), 64 connections, ${SECONDS} s\n`);
  console.log(
    table(
      ['groups', 'lookups/s', 'vs 1 group', 'p99 ms', 'CPU µs per lookup (process)', 'in actors', 'front end and hop', 'actor round trip per batch', 'lookups per batch', 'errors'],
      rows.map((r) => [r.groups, r.rps, `${Math.round((100 * r.rps) / base)} %`, r.p99, r.cpu, r.actor, r.cpu - r.actor, `${r.roundTrip.toFixed(2)} ms`, r.perBatch.toFixed(1), r.errors]),
    ),
  );
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
