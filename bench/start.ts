// `npm run bench:start`: how long a newcomer's `npm start` takes to answer (issue: a start in
// seconds). Three starts in one run, each until GET /as/v1/healthz answers, the shipped default
// config (local simulated nodes) on a fresh data directory: the service from a dist/ already
// built (the baseline), `npm start`'s way (the esbuild transpile, then the service) and the old
// way (tsc's full build, then the service). The builds write into a copy of the project's
// sources, so the checkout's own dist/ is left alone. Bounded: each start is given 120 s.
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectPath } from '../src/paths.js';
import { table } from './lib/table.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

/** A copy of what a build reads (sources, configs, manifests) with the installed node_modules linked in. */
function workingCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-start-'));
  for (const entry of ['src', 'actors', 'test', 'bench', 'config', 'package.json', 'tsconfig.json']) cpSync(projectPath(entry), join(dir, entry), { recursive: true });
  symlinkSync(projectPath('node_modules'), join(dir, 'node_modules'));
  return dir;
}

/** Milliseconds from running `command` to the first answer of /healthz of the service it starts. */
async function untilAnswer(root: string, command: string[], label: string): Promise<number> {
  const dataDir = mkdtempSync(join(tmpdir(), 'switchyard-bench-start-data-'));
  const config = join(dataDir, 'config.json');
  const shipped = JSON.parse(readFileSync(projectPath('config', 'default.json'), 'utf8')) as { server: object; nodeGroups: Array<{ platform: { local: object } }> };
  shipped.server = { ...shipped.server, port: 0 };
  for (const g of shipped.nodeGroups) g.platform.local = { ...g.platform.local, firstAddress: '127.6.0.2' };
  writeFileSync(config, JSON.stringify(shipped));
  const started = performance.now();
  const child = spawn(command[0]!, command.slice(1), {
    cwd: root,
    env: { ...process.env, SWITCHYARD_CONFIG: config, SWITCHYARD_DATA_DIR: join(dataDir, 'data'), SWITCHYARD_ADMIN_PASSWORD: 'bench-start-password', SWITCHYARD_LOG_FORMAT: 'json' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${label}: no answer within 120 s`)), 120_000);
      let out = '';
      child.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        const m = /"url":"(http:\/\/[^"]+)","dataDir"/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
      child.once('exit', (code) => reject(new Error(`${label}: exited ${code}`)));
    });
    // "listening" is logged once the port answers; a request confirms it.
    await fetch(`${url}/as/v1/healthz`);
    return performance.now() - started;
  } finally {
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      /* gone */
    }
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const root = workingCopy();
const node = process.execPath;
const fresh = () => rmSync(join(root, 'dist'), { recursive: true, force: true });
const service = [node, '--enable-source-maps', 'dist/src/main.js'];
const ways: Array<[string, () => void, string[]]> = [
  ['the service from a built dist/ (baseline)', () => {}, service],
  ["npm start's way: esbuild transpile, then the service", fresh, ['sh', '-c', `${node} src/build/fast-build.mjs && exec ${service.join(' ')}`]],
  ['the old way: tsc build, then the service', fresh, ['sh', '-c', `npx tsc -b && npx tsc -p src/dashboard/app && ${node} dist/src/dashboard/build.js && exec ${service.join(' ')}`]],
];
try {
  spawnSync(node, ['src/build/fast-build.mjs'], { cwd: root, stdio: 'inherit' });
  const best = ways.map(() => Number.POSITIVE_INFINITY);
  for (let r = 0; r < ROUNDS; r++) {
    for (const [k, [label, prepare, command]] of ways.entries()) {
      prepare();
      best[k] = Math.min(best[k]!, await untilAnswer(root, command, label));
    }
  }
  console.log(`first answer of npm start, the best of ${ROUNDS} rounds, ${new Date().toISOString().slice(0, 10)}`);
  console.log(
    table(
      ['start', 'ms to answer', 'vs baseline'],
      ways.map(([label], k) => [label, Math.round(best[k]!), `${(best[k]! / best[0]!).toFixed(2)}×`]),
    ),
  );
} finally {
  rmSync(root, { recursive: true, force: true });
}
