// Bench: cluster mode (docs/cluster.md) on a real 3-server nats-server cluster and real instances,
// every figure against a baseline measured in the same run:
//   1. a lookup answered by the group's owner (local) against the same lookup sent to another
//      instance (forwarded over NATS), a publish lookup of a bound stream (a read) and of a new
//      stream (a write: the replicated log, then LMDB);
//   2. one instance against three, the load spread over the three;
//   3. kill -9 of the owner under light load → the first new binding answered by a survivor, over
//      BENCH_TRIALS trials (min, median, max); the same for SIGTERM;
//   4. the same kill -9 against the group log's history: for each level of BENCH_HISTORY (entries,
//      default 0, 100k and 1M), a fresh cluster whose log holds that many entries before any
//      instance starts (appended raw: bench/lib/wal-history.ts); each killed owner comes back with
//      its LMDB copy lost, so that no trial is helped by a copy a former owner kept; and the log's
//      size (messages, bytes, on disk) after the set-up and after the trials.
// `npm run bench:cluster`; BENCH_SECONDS, BENCH_CONNECTIONS, BENCH_TRIALS, BENCH_HISTORY (comma-
// separated entry counts), BENCH_HISTORY_TRIALS, BENCH_ONLY=history (only part 4) or throughput (parts 1–3).
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Cluster, clusterConfig, clusterGroup, slowBindings, type Instance } from '../test/helpers/cluster.js';
import { LookupLoad } from '../test/helpers/cluster-load.js';
import { NatsCluster } from '../test/helpers/nats-cluster.js';
import { until } from '../test/helpers/until.js';
import { load, type LoadResult } from './lib/load.js';
import { pct, table } from './lib/table.js';
import { logSize, writeHistory, type LogSize } from './lib/wal-history.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const TRIALS = Number(process.env.BENCH_TRIALS ?? 10);
const HISTORY = (process.env.BENCH_HISTORY ?? '0,100000,1000000').split(',').map(Number);
const HISTORY_TRIALS = Number(process.env.BENCH_HISTORY_TRIALS ?? TRIALS);
const ONLY = process.env.BENCH_ONLY ?? '';
/** How long the first owner may take over a long history (without snapshots it replays all of it). */
const HISTORY_START_MS = 15 * 60_000;

/** What the test helpers need of a test: teardown at the end, logs on failure. */
function context() {
  const teardowns: Array<() => unknown> = [];
  return {
    /** Run at the end too (what the helpers do not register themselves). */
    stops: teardowns,
    t: { teardown: (f: () => unknown) => teardowns.push(f), passed: true, log: (...v: unknown[]) => console.error(...v) } as never,
    stop: async () => {
      for (const f of teardowns.reverse()) await f();
    },
  };
}

const ms = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { min: s[0]!, median: s[Math.floor(s.length / 2)]!, max: s.at(-1)! };
};

async function lookups(c: Cluster, token: string): Promise<LoadResult[]> {
  const owner = c.byId((await c.ownerOf('g'))!);
  const other = c.running().find((i) => i !== owner)!;
  const headers = { authorization: `Bearer ${token}` };
  await fetch(`${owner.url}/as/v1/streams/live/bound/publish?nodeGroup=g`, { headers });
  const results: LoadResult[] = [];
  let n = 0;
  for (const [label, i] of [
    ['owner (local)', owner],
    ['other (forwarded)', other],
  ] as const) {
    results.push(await load(`read, ${label}`, { url: i.url, path: '/as/v1/streams/live/bound/publish?nodeGroup=g', connections: CONNECTIONS, seconds: SECONDS, headers }));
    results.push(
      await load(`new binding, ${label}`, { url: i.url, path: '/', nextPath: () => `/as/v1/streams/live/${label[0]}${n++}/publish?nodeGroup=g`, connections: CONNECTIONS, seconds: SECONDS, headers }),
    );
  }
  return results;
}

/** Reads spread over `targets`, all at once: their summed throughput. */
async function spread(targets: Instance[], token: string, label: string): Promise<LoadResult> {
  const headers = { authorization: `Bearer ${token}` };
  const each = Math.max(1, Math.round(CONNECTIONS / targets.length));
  const rs = await Promise.all(targets.map((i) => load(label, { url: i.url, path: '/as/v1/streams/live/bound/publish?nodeGroup=g', connections: each, seconds: SECONDS, headers })));
  return {
    label,
    connections: each * targets.length,
    rps: rs.reduce((a, r) => a + r.rps, 0),
    p50: Math.max(...rs.map((r) => r.p50)),
    p99: Math.max(...rs.map((r) => r.p99)),
    errors: rs.reduce((a, r) => a + r.errors, 0),
    non2xx: rs.reduce((a, r) => a + r.non2xx, 0),
  };
}

/**
 * Stops the owner with `signal` under light load: ms until a survivor answers a new binding. The
 * stopped instance starts again after it (`loseCopy`: with its LMDB copy deleted, a replaced machine).
 */
async function handover(c: Cluster, token: string, signal: NodeJS.Signals, k: number, o: { timeoutMs?: number; loseCopy?: boolean } = {}): Promise<number> {
  const owner = c.byId((await c.ownerOf('g'))!);
  const survivors = () => c.running().filter((i) => i !== owner);
  const l = new LookupLoad(survivors, token, 'g', `${signal}${k}-`);
  l.start(2, 5);
  await until(() => l.acknowledged.size >= 5, 60_000, 'bindings before the kill');
  const at = Date.now();
  await c.kill(owner, signal);
  await until(() => l.since(at).some((a) => a.status === 200 && a.fresh), o.timeoutMs ?? 30_000, 'a new binding after the kill');
  const first = l.since(at).find((a) => a.status === 200 && a.fresh)!;
  await l.stop();
  if (o.loseCopy) for (const f of ['switchyard.mdb', 'switchyard.mdb-lock']) rmSync(join(owner.dataDir, f), { force: true });
  await c.spawn(owner);
  await c.ready(60_000);
  return first.at + first.ms - at;
}

/** A group for the bench: no per-token lookup limit, no PENDING caps, origins without a load limit. */
function benchConfig() {
  const plain = slowBindings(clusterGroup('g', 90));
  const group = { ...plain, rules: plain.rules.map((r) => ({ ...r, limit: 1e12 })), limits: { pendingBindings: 10_000_000, pendingPerToken: 10_000_000 } };
  return { ...clusterConfig([group]), limits: { lookups: { admin: { perSecond: 0, burst: 1 } } } };
}

async function inService(c: Cluster, token: string, ms: number): Promise<void> {
  await until(
    async () => (await fetch(`${c.instances[0]!.url}/as/v1/streams/live/probe/publish?nodeGroup=g`, { headers: { authorization: `Bearer ${token}` } })).status === 200,
    ms,
    'an origin in service',
  );
}

const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;

/** Part 4: hand-over time and the log's size against the log's history. */
async function history(): Promise<void> {
  const rows: Array<Array<string | number>> = [];
  for (const entries of HISTORY) {
    const ctx = context();
    try {
      const nats = await NatsCluster.start(3);
      ctx.stops.push(() => nats.stop());
      const rate = await writeHistory(nats, 'g', entries);
      const written = await logSize(nats);
      const started = Date.now();
      const c = await Cluster.start(ctx.t, benchConfig(), { nats });
      const token = await c.login(c.instances[0]!);
      await inService(c, token, HISTORY_START_MS);
      const firstStart = Date.now() - started;
      const kills: number[] = [];
      for (let k = 0; k < HISTORY_TRIALS; k++) kills.push(await handover(c, token, 'SIGKILL', k, { timeoutMs: HISTORY_START_MS, loseCopy: true }));
      const after: LogSize = await logSize(nats);
      const a = ms(kills);
      rows.push([
        entries,
        rate || '—',
        `${Math.round(firstStart / 100) / 10} s`,
        `${written.messages} / ${mib(written.onDisk)}`,
        `${after.messages} / ${mib(after.onDisk)}`,
        mib(after.snapshotBytes),
        kills.length,
        a.min,
        a.median,
        a.max,
      ]);
      console.error(`history ${entries}: ${kills.join(', ')} ms`);
    } finally {
      await ctx.stop();
    }
  }
  console.log(`\nkill -9 of the owner → a new binding answered by a survivor, against the log's history (lease TTL 3000 ms; each killed instance back with its LMDB copy lost)\n`);
  console.log(
    table(['history (entries)', 'appended /s', 'first owner serving after', 'log after set-up (msgs / on disk)', 'log after trials', 'snapshot', 'trials', 'min ms', 'median ms', 'max ms'], rows),
  );
}

async function main(): Promise<void> {
  if (ONLY !== 'history') await throughputAndHandover();
  if (ONLY !== 'throughput') await history();
}

async function throughputAndHandover(): Promise<void> {
  const ctx = context();
  try {
    // No per-token lookup limit and no PENDING caps: the bench's one token binds every new stream.
    const c = await Cluster.start(ctx.t, benchConfig());
    await c.ready();
    const token = await c.login(c.instances[0]!);
    await inService(c, token, 30_000);

    const rows = await lookups(c, token);
    const base = (label: string) => rows.find((r) => r.label === label)!.rps;
    console.log(`\nLookups, ${CONNECTIONS} connections, ${SECONDS} s each (owner = baseline)\n`);
    console.log(
      table(
        ['lookup', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'vs owner'],
        rows.map((r) => [r.label, r.rps, r.p50, r.p99, r.non2xx + r.errors, pct(r.rps, base(r.label.replace('other (forwarded)', 'owner (local)')))]),
      ),
    );

    const one = await spread([c.byId((await c.ownerOf('g'))!)], token, '1 instance (the owner)');
    const three = await spread(c.running(), token, '3 instances');
    console.log('\nReads of a bound stream spread over instances (1 instance = baseline)\n');
    console.log(
      table(
        ['instances', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'vs 1'],
        [one, three].map((r) => [r.label, r.rps, r.p50, r.p99, r.non2xx + r.errors, pct(r.rps, one.rps)]),
      ),
    );

    const kills: number[] = [];
    const terms: number[] = [];
    for (let k = 0; k < TRIALS; k++) kills.push(await handover(c, token, 'SIGKILL', k));
    for (let k = 0; k < Math.min(TRIALS, 5); k++) terms.push(await handover(c, token, 'SIGTERM', k));
    const a = ms(kills);
    const b = ms(terms);
    console.log(`\nOwner stopped → a new binding answered by a survivor (lease TTL ${3000} ms)\n`);
    console.log(
      table(
        ['stop', 'trials', 'min ms', 'median ms', 'max ms'],
        [
          ['kill -9', kills.length, a.min, a.median, a.max],
          ['SIGTERM (drain included)', terms.length, b.min, b.median, b.max],
        ],
      ),
    );
  } finally {
    await ctx.stop();
  }
}

main().catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exit(1);
});
