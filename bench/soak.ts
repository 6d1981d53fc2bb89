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
//
// This file is the sequence of the run; its parts are in bench/lib: soak-options (options and
// times), soak-group (the node group and the service's config), soak-admin (calls outside the
// load), soak-mix (the load), soak-churn, soak-sampling and soak-report.
import { createWriteStream, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { TokenSigner } from '../src/auth/tokens.js';
import { projectPath } from '../src/paths.js';
import { allReach, follow, type Follower } from './lib/events.js';
import { Fleet, LiveStreams } from './lib/fleet.js';
import { cpuShares } from './lib/proc.js';
import { BENCH_PASSWORD, BENCH_SECRET, benchConfig, runServer, type Running } from './lib/servers.js';
import { adminSession, nodeIdOf } from './lib/soak-admin.js';
import { Churn } from './lib/soak-churn.js';
import { GROUP, LIVE_MS, LIVE_STREAMS, NODES, soakSettings, TIMING } from './lib/soak-group.js';
import { MixedLoad, type LoadRun } from './lib/soak-mix.js';
import { CAPACITY_WARMUP_S, soakOptions, soakTimes } from './lib/soak-options.js';
import { report } from './lib/soak-report.js';
import { HeapSnapshots, Sampler } from './lib/soak-sampling.js';
import { Statuses } from './lib/statuses.js';

const opts = soakOptions(process.argv.slice(2));
const times = soakTimes(opts);

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
  const config = benchConfig(dir, soakSettings());
  const dataDir = join(dir, 'data');
  const snapshots = join(benchDir, `soak-${stamp}-heap`);
  if (opts.heapSnapshots) mkdirSync(snapshots, { recursive: true });
  const statuses = new Statuses();
  let events: Follower | null = null;
  let fleet: Fleet | null = null;
  try {
    // ---- 1. the service, and the static group's agents in service --------------------------
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
    const admin = await adminSession(url, statuses);
    events = await follow(url, admin.token, 'node.,nodegroup.,stream.moved,scaling.,platform.,actor.,store.', { since: 0 });
    const ev = events;

    // The static nodes are registered by the supervisor's first tick; then they heartbeat.
    await allReach(
      ev,
      GROUP,
      NODES.map((n) => n.id),
      'CREATED',
      10_000,
      true,
    );
    const agents = new Fleet(url, new TokenSigner(Buffer.from(BENCH_SECRET)), statuses, TIMING.heartbeatMs);
    fleet = agents;
    agents.add(GROUP, NODES);
    const inService = allReach(
      ev,
      GROUP,
      NODES.map((n) => n.id),
      'INSERVICE',
      10_000,
    );
    await agents.beatAll();
    await inService;
    agents.start();

    const publishLookup = async (stream: string, kind = 'publish (publisher moving)'): Promise<string | null> => {
      const r = await admin.call(kind, 'GET', `/as/v1/streams/live/${stream}/publish`, [200]);
      return r.status === 200 ? nodeIdOf(r.text) : null;
    };
    const live = new LiveStreams(agents, LIVE_STREAMS, LIVE_MS, publishLookup);
    agents.onTick = (now) => live.tick(now);
    for (let i = 0; i < LIVE_STREAMS; i++) {
      const origin = await publishLookup(`seed-${i}`, 'publish (seed)');
      if (origin) live.begin(`seed-${i}`, origin, Date.now());
    }
    await agents.beatAll();

    // ---- 2. capacity: the mix at full speed --------------------------------------------------
    const runId = Date.now().toString(36);
    const mix = new MixedLoad({ url, authorization: admin.authorization, connections: opts.connections, group: GROUP, runId, fleet: agents, live, statuses, rowMs: times.rowMs });
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

    // ---- 3. the soak: the mix at `rate`, the churn beside it, samples all along --------------
    const sampler = new Sampler({ pid, url, dbFile: join(dataDir, 'switchyard.mdb'), group: GROUP, statuses });
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

    // ---- 4. the report -------------------------------------------------------------------------
    const { pass } = report(
      {
        opts,
        times,
        soakStart,
        capacity: { result: capacity, hist: mix.capacityHist, cpu: cpuAtCapacity },
        rate,
        result,
        rows: mix.rows,
        samples: sampler.samples,
        statuses,
        live,
        churn: churn.counts,
        events: ev.counts,
        heapSnapshots: { taken: heapSnapshots.taken, dir: snapshots },
        interrupted,
      },
      join(benchDir, `soak-${stamp}.json`),
    );
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
