// Bench 4: restart and memory. The time from process start to ready (GET /as/v1/readyz answering
// 200) with 100k nodes and 1M bindings in LMDB, against the same start with an empty store, in the
// same run; and the heap a node and a binding take in a node-group actor's model.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../src/store/store.js';
import { projectPath } from '../src/paths.js';
import { GroupModel } from '../src/model/group-model.js';
import { fleetBindings, fleetGroup, fleetNodes } from './lib/synthetic-fleet.js';
import { BENCH_PASSWORD, benchConfig } from './lib/servers.js';
import { table } from './lib/table.js';

const NODES = Number(process.env.BENCH_NODES ?? 100_000);
const BINDINGS = Number(process.env.BENCH_BINDINGS ?? 1_000_000);
async function seed(dataDir: string, nodes: number, bindings: number): Promise<void> {
  const store = openStore(dataDir);
  await store.groups.put('bench', { spec: fleetGroup(), source: 'api', updatedAt: Date.now() });
  const put = async <T>(records: Generator<T>, write: (r: T) => void) => {
    let batch: T[] = [];
    const flush = async () => {
      const rows = batch;
      batch = [];
      await store.root.transaction(() => rows.forEach(write));
    };
    for (const r of records) {
      batch.push(r);
      if (batch.length === 50_000) await flush();
    }
    await flush();
  };
  await put(fleetNodes(nodes, true), (r) => store.nodes.put(['bench', r.id], r));
  await put(fleetBindings(bindings, nodes), (b) => store.bindings.put(['bench', b.stream], b));
  await store.close();
}

/** Milliseconds from spawning the service to its first 200 on /readyz; and the actor's heap then. */
async function timeToReady(dir: string): Promise<{ ms: number; actorHeap: number; rss: number }> {
  const config = benchConfig(dir, { nodeGroups: [] });
  const started = performance.now();
  const proc = spawn(process.execPath, [projectPath('dist', 'src', 'main.js')], {
    env: { ...process.env, SWITCHYARD_CONFIG: config, SWITCHYARD_ADMIN_PASSWORD: BENCH_PASSWORD, SWITCHYARD_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let buffer = '';
    proc.stdout!.on('data', (c: Buffer) => {
      buffer += c.toString();
      const m = /"url":"(http:[^"]+)"[^\n]*"msg":"listening"/.exec(buffer);
      if (m) resolve(m[1]!);
    });
    proc.once('exit', (code) => reject(new Error(`the service exited with ${code}`)));
  });
  for (;;) {
    const r = await fetch(`${url}/as/v1/readyz`).catch(() => null);
    if (r?.status === 200) break;
    await new Promise((res) => setTimeout(res, 10));
  }
  const ms = performance.now() - started;
  const metrics = await (await fetch(`${url}/as/v1/metrics`)).text();
  const actorHeap = Number(/switchyard_actor_heap_bytes\{group="bench"\} (\d+)/.exec(metrics)?.[1] ?? 0);
  const rss = Number(/switchyard_process_resident_memory_bytes (\d+)/.exec(metrics)?.[1] ?? 0);
  proc.kill('SIGKILL');
  await new Promise((res) => proc.once('exit', res));
  return { ms, actorHeap, rss };
}

function heapUsed(): number {
  (globalThis as { gc?: () => void }).gc?.();
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed;
}

/** The heap a node and a binding take in the model, measured here with the same records. */
function modelMemory(): { perNode: number; perBinding: number } {
  const records = [...fleetNodes(NODES, true)];
  const bindings = [...fleetBindings(BINDINGS, NODES)];
  const base = heapUsed();
  const withNodes = new GroupModel(fleetGroup());
  withNodes.restore(records, [], [], 0);
  const nodesOnly = heapUsed();
  withNodes.restore([], bindings, [], 0);
  const all = heapUsed();
  // Records are the store's, held by the model; the arrays that fed it are not counted.
  const arrays = records.length * 8 + bindings.length * 8;
  void withNodes;
  return { perNode: (nodesOnly - base + arrays / 2) / NODES, perBinding: (all - nodesOnly) / BINDINGS };
}

async function main(): Promise<void> {
  const empty = mkdtempSync(join(tmpdir(), 'switchyard-restart-'));
  const full = mkdtempSync(join(tmpdir(), 'switchyard-restart-'));
  try {
    const seedStarted = performance.now();
    await seed(join(full, 'data'), NODES, BINDINGS);
    const seeded = performance.now() - seedStarted;
    const a = await timeToReady(empty);
    const b = await timeToReady(full);
    const mem = modelMemory();
    console.log(`\nRestart and memory (${NODES.toLocaleString('en')} nodes and ${BINDINGS.toLocaleString('en')} bindings written to LMDB in ${(seeded / 1000).toFixed(1)} s)\n`);
    console.log(
      table(
        ['start', 'to ready', 'vs empty store', 'actor heap at ready', 'process RSS at ready'],
        [
          ['empty store', `${Math.round(a.ms)} ms`, '1.00x', `${(a.actorHeap / 2 ** 20).toFixed(0)} MiB`, `${(a.rss / 2 ** 20).toFixed(0)} MiB`],
          [
            `${NODES / 1000}k nodes, ${BINDINGS / 1e6}M bindings`,
            `${Math.round(b.ms)} ms`,
            `${(b.ms / a.ms).toFixed(2)}x`,
            `${(b.actorHeap / 2 ** 20).toFixed(0)} MiB`,
            `${(b.rss / 2 ** 20).toFixed(0)} MiB`,
          ],
        ],
      ),
    );
    console.log('');
    console.log(
      table(
        ['in a node-group actor', 'heap bytes', 'goal'],
        [
          ['per node', Math.round(mem.perNode), '1024'],
          ['per binding', Math.round(mem.perBinding), '200'],
        ],
      ),
    );
  } finally {
    rmSync(empty, { recursive: true, force: true });
    rmSync(full, { recursive: true, force: true });
  }
}

if (process.argv[1]?.endsWith('restart.js')) {
  main().catch((err: Error) => {
    console.error(err);
    process.exit(1);
  });
}
