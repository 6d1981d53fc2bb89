// Soak (issue 6): `npm run soak -- --minutes N`. Mixed lookups and node churn at about 70 % of
// the capacity measured at the start of the same run, for N minutes; the service's RSS and heaps
// sampled all along, and every status judged as it arrives.
//
//   1. Switchyard as a child process with a static node group (4 origins, 12 edges, 2 regions)
//      whose agents this process plays: heartbeats every second with the streams they carry.
//   2. Capacity: autocannon at full speed with the mixed workload for a few seconds; then the same
//      mix at `--fraction` (0.7) of it with autocannon's overallRate for the whole run.
//   3. Churn all along: an agent goes silent (FAULT after nodeTimeout) and comes back; provisions
//      come and go; a node group is created, used, one node drained, one doomed, and deleted.
//   4. A table over time, the RSS growth after warm-up against the 5 % target, every unexpected
//      status with its body; the result as JSON in .bench/. Exit code 1 when the target is missed
//      or anything unexpected happened.
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { TokenSigner } from '../src/auth/tokens.js';
import { projectPath } from '../src/paths.js';
import { allReach, follow, type Follower } from './lib/events.js';
import { Fleet, LiveStreams } from './lib/fleet.js';
import { Histogram } from './lib/histogram.js';
import { cpuShares, median, mib, slope } from './lib/proc.js';
import { BENCH_PASSWORD, BENCH_SECRET, runServer, type Running } from './lib/servers.js';
import { adminSession, nodeIdOf } from './lib/soak-admin.js';
import { Churn } from './lib/soak-churn.js';
import { GROUP, LIVE_MS, LIVE_STREAMS, NODES, soakConfig, TIMING } from './lib/soak-group.js';
import { MIX, MixedLoad, type LoadRun } from './lib/soak-mix.js';
import { CAPACITY_WARMUP_S, soakOptions, soakTimes, TARGET_GROWTH } from './lib/soak-options.js';
import { HeapSnapshots, Sampler, type Sample } from './lib/soak-sampling.js';
import { Statuses } from './lib/statuses.js';
import { table } from './lib/table.js';

const opts = soakOptions(process.argv.slice(2));
const times = soakTimes(opts);

// ---- the run --------------------------------------------------------------------------------

const aborted = new AbortController();
let sy: Running | null = null;
let load: LoadRun | null = null;
let interrupted = 0;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    interrupted++;
    console.error(`\n${signal}: stopping the soak${interrupted > 1 ? ' now' : ' (again to force)'}`);
    aborted.abort();
    load?.stop();
    if (interrupted > 1) {
      sy?.proc.kill('SIGKILL');
      process.exit(130);
    }
  });
}
process.on('exit', () => {
  if (sy && sy.proc.exitCode === null && sy.proc.signalCode === null) sy.proc.kill('SIGKILL');
});

async function main(): Promise<number> {
  const benchDir = projectPath('.bench');
  mkdirSync(benchDir, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-soak-'));
  const config = join(dir, 'config.json');
  const dataDir = join(dir, 'data');
  const snapshots = join(benchDir, `soak-${stamp}-heap`);
  writeFileSync(config, JSON.stringify(soakConfig(dataDir)));
  if (opts.heapSnapshots) mkdirSync(snapshots, { recursive: true });
  const statuses = new Statuses();
  let events: Follower | null = null;
  let fleet: Fleet | null = null;
  try {
    sy = await runServer(
      projectPath('dist', 'src', 'main.js'),
      { SWITCHYARD_CONFIG: config, SWITCHYARD_ADMIN_PASSWORD: BENCH_PASSWORD, SWITCHYARD_JWT_SECRET: BENCH_SECRET, SWITCHYARD_LOG_LEVEL: 'info' },
      [],
      opts.heapSnapshots ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${snapshots}`] : [],
    );
    const server = sy;
    const serverLog = join(benchDir, `soak-${stamp}-server.log`);
    server.proc.stdout!.pipe(createWriteStream(serverLog));
    const pid = server.proc.pid!;
    const url = server.url;
    const signer = new TokenSigner(Buffer.from(BENCH_SECRET));

    const admin = await adminSession(url, statuses);
    const { call, authorization } = admin;

    events = await follow(url, admin.token, 'node.,nodegroup.,stream.moved,scaling.,platform.,actor.,store.', { since: 0 });
    const ev = events;

    // The static nodes are registered by the supervisor's first tick; then they heartbeat.
    await allReach(ev, GROUP, NODES.map((n) => n.id), 'CREATED', 10_000, true);
    const agents = new Fleet(url, signer, statuses, TIMING.heartbeatMs);
    fleet = agents;
    agents.add(GROUP, NODES);
    const inService = allReach(ev, GROUP, NODES.map((n) => n.id), 'INSERVICE', 10_000);
    await agents.beatAll();
    await inService;
    agents.start();

    const publishLookup = async (stream: string, kind = 'publish (publisher moving)'): Promise<string | null> => {
      const r = await call(kind, 'GET', `/as/v1/streams/live/${stream}/publish`, [200]);
      return r.status === 200 ? nodeIdOf(r.text) : null;
    };
    const live = new LiveStreams(agents, LIVE_STREAMS, LIVE_MS, publishLookup);
    agents.onTick = (now) => live.tick(now);
    for (let i = 0; i < LIVE_STREAMS; i++) {
      const origin = await publishLookup(`seed-${i}`, 'publish (seed)');
      if (origin) live.begin(`seed-${i}`, origin, Date.now());
    }
    await agents.beatAll();

    // ---- the mixed load ----------------------------------------------------------------------
    const runId = Date.now().toString(36);
    const mix = new MixedLoad({ url, authorization, connections: opts.connections, group: GROUP, runId, fleet: agents, live, statuses, rowMs: times.rowMs });

    console.log(`\nSoak: ${opts.minutes} min at ${Math.round(opts.fraction * 100)} % of capacity; ${cpus().length} cores (${cpus()[0]?.model.trim()}), Node ${process.version}`);
    console.log(`  service pid ${pid}, log ${serverLog}`);
    console.log(`  capacity: the mix at full speed, ${CAPACITY_WARMUP_S} s to warm up (JIT, heap sizes), then ${opts.capacitySeconds} s measured, ${opts.connections} connections …`);
    load = mix.run(CAPACITY_WARMUP_S);
    await load;
    mix.capacityHist.reset();
    if (aborted.signal.aborted) throw new Error('interrupted during the capacity run');
    const capacityCpu = cpuShares([pid, process.pid]);
    load = mix.run(opts.capacitySeconds);
    const capacity = await load;
    load = null;
    const cpuAtCapacity = capacityCpu();
    const rate = Math.max(1, Math.round(opts.fraction * capacity.requests.average));
    console.log(
      `  capacity ${Math.round(capacity.requests.average)} req/s (p99 ${mix.capacityHist.percentile(99)} ms; CPU of the ${cpus().length} cores: service ${Math.round(cpuAtCapacity.watched[0]!)} %, ` +
        `load generator ${Math.round(cpuAtCapacity.watched[1]!)} %, other processes ${Math.round(cpuAtCapacity.others)} %); soak at ${rate} req/s for ${opts.minutes} min`,
    );
    if (aborted.signal.aborted) throw new Error('interrupted during the capacity run');

    // ---- sampling ----------------------------------------------------------------------------
    const sampler = new Sampler({ pid, url, dbFile: join(dataDir, 'switchyard.mdb'), group: GROUP, statuses });
    const samples = sampler.samples;

    await sampler.sample();
    /** The churn's schedule and the samples' times count from here. */
    const soakStart = Date.now();
    sampler.begin(soakStart);
    mix.record(soakStart);
    const heapSnapshots = new HeapSnapshots(pid, opts.heapSnapshots, soakStart);
    const sampling = setInterval(() => void sampler.sample(), opts.sampleSeconds * 1000);
    const warmupSnapshot = setTimeout(() => heapSnapshots.take('end of warm-up'), times.warmupMs);
    const churn = new Churn({ fleet: agents, live, admin, events: ev, statuses, runId, start: soakStart, end: soakStart + times.runMs, signal: aborted.signal });
    const loops = churn.run();
    load = mix.run(times.runMs / 1000, rate);
    const result = await load;
    load = null;
    clearTimeout(warmupSnapshot);
    await sampler.sample();
    clearInterval(sampling);
    heapSnapshots.take('end');
    aborted.abort();
    await Promise.allSettled(loops);
    live.endAll();
    await agents.stop();
    if (ev.failure) statuses.record('events', 'stream', 'unexpected', ev.failure);
    ev.stop();
    events = null;
    await server.stop();
    sy = null;

    // ---- report ------------------------------------------------------------------------------
    const after = samples.filter((s) => s.t >= times.warmupMs);
    const windowOf = (from: number, to: number, f: (s: Sample) => number) => median(samples.filter((s) => s.t >= from && s.t < to).map(f));
    const lastT = samples.at(-1)?.t ?? times.runMs;
    const growth = (f: (s: Sample) => number) => {
      const first = windowOf(times.warmupMs, times.warmupMs + times.windowMs, f);
      const last = windowOf(lastT - times.windowMs, lastT + 1, f);
      return { first, last, percent: ((last - first) / first) * 100, perHour: slope(after.map((s) => [s.t / 3_600_000, f(s)] as const)) };
    };
    const rss = growth((s) => s.rss);
    const anon = growth((s) => s.anon);
    const file = growth((s) => s.file);
    const heap = growth((s) => s.heapUsed);
    const actorHeap = growth((s) => s.actorHeapSoak);
    const bindings = growth((s) => s.bindings);

    // An interrupted run reports the time it ran; its growth only if it got past two windows after warm-up.
    const measurable = lastT >= times.warmupMs + 2 * times.windowMs;
    const rowCount = Math.max(1, Math.ceil(Math.min(lastT, times.runMs) / times.rowMs));
    const rowTable = Array.from({ length: rowCount }, (_, i) => {
      // The last row also takes the sample made as the load stopped.
      const inRow = samples.filter((s) => s.t > i * times.rowMs && (s.t <= (i + 1) * times.rowMs || i === rowCount - 1));
      const prev = samples.filter((s) => s.t <= i * times.rowMs).at(-1)?.unexpected ?? 0;
      const row = mix.rows[i];
      const seconds = Math.max(1, Math.min(times.rowMs, Math.min(lastT, times.runMs) - i * times.rowMs)) / 1000;
      return {
        at: times.rowMs >= 60_000 ? `${i + 1}` : `${((i + 1) * times.rowMs) / 1000} s`,
        rss: mib(median(inRow.map((s) => s.rss))),
        heap: mib(median(inRow.map((s) => s.heapUsed))),
        actorHeap: mib(median(inRow.map((s) => s.actorHeapSoak))),
        bindings: Math.round(median(inRow.map((s) => s.bindings))),
        rps: row ? Math.round(row.responses / seconds) : 0,
        p99: row ? row.hist.percentile(99) : 0,
        unexpected: (inRow.at(-1)?.unexpected ?? prev) - prev,
        cpuService: Math.round(median(inRow.map((s) => s.cpuService))),
        cpuOthers: Math.round(median(inRow.map((s) => s.cpuOthers))),
      };
    });
    const overall = new Histogram();
    for (const r of mix.rows) if (r) overall.add(r.hist);
    const met = measurable && rss.percent <= TARGET_GROWTH;
    const pass = interrupted === 0 && met && statuses.unexpectedTotal === 0;

    console.log(`\nSoak over time (${times.rowMs >= 60_000 ? 'per minute' : `per ${times.rowMs / 1000} s`}; medians of ${opts.sampleSeconds}-s samples; RSS from /proc, heaps from /as/v1/metrics)\n`);
    console.log(
      table(
        [times.rowMs >= 60_000 ? 'minute' : 'until', 'RSS MiB', 'main heap MiB', 'actor heap MiB', 'bindings', 'req/s', 'p99 ms', 'unexpected', 'service CPU %', 'others CPU %'],
        rowTable.map((r) => [r.at, r.rss, r.heap, r.actorHeap, r.bindings, r.rps, r.p99, r.unexpected, r.cpuService, r.cpuOthers]),
      ),
    );
    const fmt = (g: ReturnType<typeof growth>, unit = 'MiB') =>
      unit === 'MiB' ? `${mib(g.first)} → ${mib(g.last)} MiB (${g.percent >= 0 ? '+' : ''}${g.percent.toFixed(1)} %; trend ${(g.perHour / 2 ** 20).toFixed(1)} MiB/h)` : `${Math.round(g.first)} → ${Math.round(g.last)} (${g.percent.toFixed(1)} %)`;
    console.log(`\nWarm-up: first ${Math.round(times.warmupMs / 1000)} s excluded; compared: median of the first ${Math.round(times.windowMs / 1000)} s after it vs median of the last ${Math.round(times.windowMs / 1000)} s`);
    console.log(`  RSS          ${fmt(rss)}   target ≤ ${TARGET_GROWTH} %: ${!measurable ? 'not measured (the run ended too early)' : met ? 'met' : 'NOT MET'}`);
    console.log(`    anonymous  ${fmt(anon)}`);
    console.log(`    file       ${fmt(file)}   (code, mapped LMDB pages; data file ${mib(samples.at(-1)?.dbBytes ?? NaN)} MiB at the end)`);
    console.log(`  main heap    ${fmt(heap)}`);
    console.log(`  actor heap   ${fmt(actorHeap)}   (group ${GROUP})`);
    console.log(`  bindings     ${fmt(bindings, 'n')}`);
    console.log(`  load         ${rate} req/s asked, ${Math.round(result.requests.average)} req/s done; p50 ${overall.percentile(50)} ms, p99 ${overall.percentile(99)} ms, max ${Math.round(overall.max)} ms; autocannon errors ${result.errors}, timeouts ${result.timeouts}`);
    console.log(`  live streams ${live.started} started, ${live.ended} ended, ${live.moved} moved by their publishers`);
    console.log(
      `  churn        ${churn.counts.nodeCycles} agent(s) silenced and back (silence → FAULT median ${Math.round(median(churn.counts.faultMs))} ms, back → INSERVICE median ${Math.round(median(churn.counts.backMs))} ms); ` +
        `${churn.counts.groupCycles} node group(s) created, used, drained, doomed and deleted${churn.counts.groupCycles ? ` (median ${Math.round(median(churn.counts.groupCycleMs) / 100) / 10} s each)` : ''}; ${churn.counts.provisions} provisions created`,
    );
    console.log(`  events       ${[...ev.counts].map(([t, n]) => `${t} ${n}`).join(', ')}`);
    if (heapSnapshots.taken.length) console.log(`  heap snapshots (main thread): ${heapSnapshots.taken.join(', ')} in ${snapshots}`);

    console.log('\nStatuses by request kind\n');
    console.log(
      table(
        ['kind', 'statuses'],
        [...statuses.counts].map(([kind, m]) => [kind, [...m].map(([s, n]) => `${s}: ${n}`).join(', ')]),
      ),
    );
    for (const f of statuses.tolerated.values()) console.log(`\ntolerated: ${f.count} × ${f.kind} ${f.status} ${f.code} — ${f.why}\n  e.g. ${f.samples[0] ?? ''}`);
    if (statuses.unexpectedTotal === 0) console.log('\nNo unexpected status.');
    for (const f of statuses.unexpected.values()) {
      console.log(`\nUNEXPECTED: ${f.count} × ${f.kind} ${f.status} ${f.code} ${f.why} (first at ${Math.round((f.firstAt - soakStart) / 1000)} s, last at ${Math.round((f.lastAt - soakStart) / 1000)} s)`);
      for (const s of f.samples) console.log(`  ${s}`);
    }
    const verdict = interrupted ? 'INTERRUPTED' : pass ? 'PASS' : 'FAIL';
    const growthText = measurable ? `${rss.percent >= 0 ? '+' : ''}${rss.percent.toFixed(1)} %` : 'not measured';
    console.log(`\n${verdict}: RSS ${growthText} after warm-up (target ≤ ${TARGET_GROWTH} %), ${statuses.unexpectedTotal} unexpected status(es), ${Math.round(lastT / 1000)} s of ${times.runMs / 1000} s run`);

    const out = join(benchDir, `soak-${stamp}.json`);
    writeFileSync(
      out,
      JSON.stringify(
        {
          date: new Date(soakStart).toISOString(),
          machine: { cores: cpus().length, cpu: cpus()[0]?.model.trim(), node: process.version },
          options: { ...opts, warmupSeconds: times.warmupMs / 1000, windowSeconds: times.windowMs / 1000, fleet: { origins: 4, edges: 12, regions: 2, liveStreams: LIVE_STREAMS }, timing: TIMING, mix: MIX },
          capacity: { rps: Math.round(capacity.requests.average), p99: mix.capacityHist.percentile(99), cpu: { service: cpuAtCapacity.watched[0], loadGenerator: cpuAtCapacity.watched[1], others: cpuAtCapacity.others } },
          rate,
          load: { rps: Math.round(result.requests.average), p50: overall.percentile(50), p99: overall.percentile(99), max: overall.max, errors: result.errors, timeouts: result.timeouts },
          growth: { rss, anon, file, heap, actorHeap, bindings },
          pass,
          verdict,
          ranSeconds: lastT / 1000,
          rows: rowTable,
          samples,
          statuses: Object.fromEntries([...statuses.counts].map(([k, m]) => [k, Object.fromEntries(m)])),
          tolerated: [...statuses.tolerated.values()],
          unexpected: [...statuses.unexpected.values()],
          churn: churn.counts,
          liveStreams: { started: live.started, ended: live.ended, moved: live.moved },
          events: Object.fromEntries(ev.counts),
          heapSnapshots: heapSnapshots.taken,
        },
        null,
        1,
      ),
    );
    console.log(`\nResult: ${out}`);
    if (aborted.signal.aborted && interrupted) return 130;
    return pass ? 0 : 1;
  } finally {
    load?.stop();
    events?.stop();
    await fleet?.stop();
    await sy?.stop();
    sy = null;
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(err);
    process.exit(1);
  },
);
