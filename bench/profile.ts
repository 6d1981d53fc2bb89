// `npm run profile -- [subscribe|publish|heartbeats|channels] [seconds]`: runs the service
// under --cpu-prof, drives one lookup at 64 connections (or node heartbeats: 64 HTTP connections,
// or a node channel per node), stops it cleanly and prints where each thread spent its time.
// The .cpuprofile files stay in .bench/profiles/ for a flame graph (Chrome DevTools, speedscope).
import { mkdirSync, readdirSync, rmSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TokenSigner } from '../src/auth/tokens.js';
import { projectPath } from '../src/paths.js';
import { heartbeatLoad } from './lib/heartbeat-load.js';
import { load } from './lib/load.js';
import { summarize } from './lib/profile.js';
import { BENCH_PASSWORD, BENCH_NODE_TOKEN_TTL, BENCH_SECRET, switchyard } from './lib/servers.js';

const kind = (['publish', 'heartbeats', 'channels'] as const).find((k) => k === process.argv[2]) ?? 'subscribe';
const seconds = Number(process.argv[3] ?? 8);
const out = projectPath('.bench', 'profiles');

async function main(): Promise<void> {
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-profile-'));
  const sy = await switchyard(dir, { origins: 4, edges: 8, nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${out}`] });
  const signer = new TokenSigner(Buffer.from(BENCH_SECRET));
  const post = async (path: string, body: unknown, token?: string) =>
    (await fetch(sy.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) })).json();
  for (const id of ['o0', 'o1', 'o2', 'o3', 'e0', 'e1', 'e2', 'e3', 'e4', 'e5', 'e6', 'e7'])
    await post(`/as/v1/nodes/${id}/events`, { ready: true, metrics: {} }, signer.nodeToken('bench', id, BENCH_NODE_TOKEN_TTL));
  const token = ((await post('/as/v1/auth/login', { username: 'admin', password: BENCH_PASSWORD })) as { accessToken: string }).accessToken;
  const headers = { authorization: `Bearer ${token}` };
  await fetch(`${sy.url}/as/v1/streams/live/live1/publish`, { headers });
  let n = 0;
  const r =
    kind === 'heartbeats' || kind === 'channels'
      ? await heartbeatLoad(sy.url, { nodes: 8, connections: 64, seconds, transport: kind === 'channels' ? 'channel' : 'http', pipelining: kind === 'channels' ? 8 : 1 }).result
      : await load(kind, {
          url: sy.url,
          path: '/as/v1/streams/live/live1/subscribe',
          ...(kind === 'publish' ? { nextPath: () => `/as/v1/streams/live/p${n++}/publish` } : {}),
          connections: 64,
          seconds,
          headers,
        });
  await sy.stop();
  rmSync(dir, { recursive: true, force: true });
  console.log(`${kind}: ${r.rps} req/s, p99 ${r.p99} ms\n`);
  for (const file of readdirSync(out).filter((f) => f.endsWith('.cpuprofile'))) {
    const s = summarize(join(out, file), 22);
    if (s.total < 200_000) continue;
    console.log(`== ${file} (${(s.total / 1e6).toFixed(1)} s sampled)`);
    console.log(
      s.files
        .slice(0, 12)
        .map((f) => `  ${(100 * f.share).toFixed(1).padStart(5)} %  ${f.name}`)
        .join('\n'),
    );
    console.log('  --');
    console.log(s.functions.map((f) => `  ${(100 * f.share).toFixed(1).padStart(5)} %  ${f.name}`).join('\n'));
  }
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
