// The soak's report: the growth of RSS and heaps after warm-up (median of the first window against
// the last, and the trend), the table over time, every tolerated and unexpected status, the
// verdict (PASS only when the RSS growth was measured and met the target, nothing unexpected
// happened and the run was not interrupted), and the whole result as JSON.
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import type autocannon from 'autocannon';
import type { LiveStreams } from './fleet.js';
import { Histogram } from './histogram.js';
import { median, mib, slope } from './proc.js';
import type { ChurnCounts } from './soak-churn.js';
import { GROUP, LIVE_STREAMS, TIMING } from './soak-group.js';
import { MIX, type Row } from './soak-mix.js';
import { TARGET_GROWTH, type SoakOptions, type SoakTimes } from './soak-options.js';
import type { Sample } from './soak-sampling.js';
import type { Statuses } from './statuses.js';
import { table } from './table.js';

export interface SoakRun {
  opts: SoakOptions;
  times: SoakTimes;
  /** When the soak load started (ms since the epoch). */
  soakStart: number;
  capacity: { result: autocannon.Result; hist: Histogram; cpu: { watched: number[]; others: number } };
  /** The rate asked of the soak load, and what it did. */
  rate: number;
  result: autocannon.Result;
  rows: Row[];
  samples: Sample[];
  statuses: Statuses;
  live: LiveStreams;
  churn: ChurnCounts;
  events: Map<string, number>;
  heapSnapshots: { taken: string[]; dir: string };
  /** Signals received. */
  interrupted: number;
}

export interface Growth {
  first: number;
  last: number;
  percent: number;
  perHour: number;
}

export type Verdict = 'PASS' | 'FAIL' | 'INTERRUPTED';

/** Prints the report, writes the result to `out`; returns whether the soak passed. */
export function report(r: SoakRun, out: string): { pass: boolean; verdict: Verdict } {
  const { opts, statuses, samples, live, churn } = r;
  const { runMs, warmupMs, windowMs, rowMs } = r.times;
  const after = samples.filter((s) => s.t >= warmupMs);
  const windowOf = (from: number, to: number, f: (s: Sample) => number) => median(samples.filter((s) => s.t >= from && s.t < to).map(f));
  const lastT = samples.at(-1)?.t ?? runMs;
  const growth = (f: (s: Sample) => number): Growth => {
    const first = windowOf(warmupMs, warmupMs + windowMs, f);
    const last = windowOf(lastT - windowMs, lastT + 1, f);
    return { first, last, percent: ((last - first) / first) * 100, perHour: slope(after.map((s) => [s.t / 3_600_000, f(s)] as const)) };
  };
  const rss = growth((s) => s.rss);
  const anon = growth((s) => s.anon);
  const file = growth((s) => s.file);
  const heap = growth((s) => s.heapUsed);
  const actorHeap = growth((s) => s.actorHeapSoak);
  const bindings = growth((s) => s.bindings);

  // An interrupted run reports the time it ran; its growth only if it got past two windows after warm-up.
  const measurable = lastT >= warmupMs + 2 * windowMs;
  const rowTable = rowsOverTime(samples, r.rows, r.times, lastT);
  const overall = new Histogram();
  for (const row of r.rows) if (row) overall.add(row.hist);
  const met = measurable && rss.percent <= TARGET_GROWTH;
  const pass = r.interrupted === 0 && met && statuses.unexpectedTotal === 0;

  console.log(`\nSoak over time (${rowMs >= 60_000 ? 'per minute' : `per ${rowMs / 1000} s`}; medians of ${opts.sampleSeconds}-s samples; RSS from /proc, heaps from /as/v1/metrics)\n`);
  console.log(
    table(
      [rowMs >= 60_000 ? 'minute' : 'until', 'RSS MiB', 'main heap MiB', 'actor heap MiB', 'bindings', 'req/s', 'p99 ms', 'unexpected', 'service CPU %', 'others CPU %'],
      rowTable.map((row) => [row.at, row.rss, row.heap, row.actorHeap, row.bindings, row.rps, row.p99, row.unexpected, row.cpuService, row.cpuOthers]),
    ),
  );
  const fmt = (g: Growth, unit = 'MiB') =>
    unit === 'MiB'
      ? `${mib(g.first)} → ${mib(g.last)} MiB (${g.percent >= 0 ? '+' : ''}${g.percent.toFixed(1)} %; trend ${(g.perHour / 2 ** 20).toFixed(1)} MiB/h)`
      : `${Math.round(g.first)} → ${Math.round(g.last)} (${g.percent.toFixed(1)} %)`;
  console.log(
    `\nWarm-up: first ${Math.round(warmupMs / 1000)} s excluded; compared: median of the first ${Math.round(windowMs / 1000)} s after it vs median of the last ${Math.round(windowMs / 1000)} s`,
  );
  console.log(`  RSS          ${fmt(rss)}   target ≤ ${TARGET_GROWTH} %: ${!measurable ? 'not measured (the run ended too early)' : met ? 'met' : 'NOT MET'}`);
  console.log(`    anonymous  ${fmt(anon)}`);
  console.log(`    file       ${fmt(file)}   (code, mapped LMDB pages; data file ${mib(samples.at(-1)?.dbBytes ?? NaN)} MiB at the end)`);
  console.log(`  main heap    ${fmt(heap)}`);
  console.log(`  actor heap   ${fmt(actorHeap)}   (group ${GROUP})`);
  console.log(`  bindings     ${fmt(bindings, 'n')}`);
  console.log(
    `  load         ${r.rate} req/s asked, ${Math.round(r.result.requests.average)} req/s done; p50 ${overall.percentile(50)} ms, p99 ${overall.percentile(99)} ms, max ${Math.round(overall.max)} ms; autocannon errors ${r.result.errors}, timeouts ${r.result.timeouts}`,
  );
  console.log(`  live streams ${live.started} started, ${live.ended} ended, ${live.moved} moved by their publishers`);
  console.log(
    `  churn        ${churn.nodeCycles} agent(s) silenced and back (silence → FAULT median ${Math.round(median(churn.faultMs))} ms, back → INSERVICE median ${Math.round(median(churn.backMs))} ms); ` +
      `${churn.groupCycles} node group(s) created, used, drained, doomed and deleted${churn.groupCycles ? ` (median ${Math.round(median(churn.groupCycleMs) / 100) / 10} s each)` : ''}; ${churn.provisions} provisions created`,
  );
  console.log(`  events       ${[...r.events].map(([t, n]) => `${t} ${n}`).join(', ')}`);
  if (r.heapSnapshots.taken.length) console.log(`  heap snapshots (main thread): ${r.heapSnapshots.taken.join(', ')} in ${r.heapSnapshots.dir}`);

  printStatuses(statuses, r.soakStart);
  const verdict: Verdict = r.interrupted ? 'INTERRUPTED' : pass ? 'PASS' : 'FAIL';
  const growthText = measurable ? `${rss.percent >= 0 ? '+' : ''}${rss.percent.toFixed(1)} %` : 'not measured';
  console.log(`\n${verdict}: RSS ${growthText} after warm-up (target ≤ ${TARGET_GROWTH} %), ${statuses.unexpectedTotal} unexpected status(es), ${Math.round(lastT / 1000)} s of ${runMs / 1000} s run`);

  writeFileSync(
    out,
    JSON.stringify(
      {
        date: new Date(r.soakStart).toISOString(),
        machine: { cores: cpus().length, cpu: cpus()[0]?.model.trim(), node: process.version },
        options: { ...opts, warmupSeconds: warmupMs / 1000, windowSeconds: windowMs / 1000, fleet: { origins: 4, edges: 12, regions: 2, liveStreams: LIVE_STREAMS }, timing: TIMING, mix: MIX },
        capacity: {
          rps: Math.round(r.capacity.result.requests.average),
          p99: r.capacity.hist.percentile(99),
          cpu: { service: r.capacity.cpu.watched[0], loadGenerator: r.capacity.cpu.watched[1], others: r.capacity.cpu.others },
        },
        rate: r.rate,
        load: { rps: Math.round(r.result.requests.average), p50: overall.percentile(50), p99: overall.percentile(99), max: overall.max, errors: r.result.errors, timeouts: r.result.timeouts },
        growth: { rss, anon, file, heap, actorHeap, bindings },
        pass,
        verdict,
        ranSeconds: lastT / 1000,
        rows: rowTable,
        samples,
        statuses: Object.fromEntries([...statuses.counts].map(([k, m]) => [k, Object.fromEntries(m)])),
        tolerated: [...statuses.tolerated.values()],
        unexpected: [...statuses.unexpected.values()],
        churn,
        liveStreams: { started: live.started, ended: live.ended, moved: live.moved },
        events: Object.fromEntries(r.events),
        heapSnapshots: r.heapSnapshots.taken,
      },
      null,
      1,
    ),
  );
  console.log(`\nResult: ${out}`);
  return { pass, verdict };
}

/** One row per `rowMs` of the run (as far as it got): medians of the samples in it, the load's rate and p99. */
function rowsOverTime(samples: readonly Sample[], rows: readonly Row[], { runMs, rowMs }: SoakTimes, lastT: number) {
  const rowCount = Math.max(1, Math.ceil(Math.min(lastT, runMs) / rowMs));
  return Array.from({ length: rowCount }, (_, i) => {
    // The last row also takes the sample made as the load stopped.
    const inRow = samples.filter((s) => s.t > i * rowMs && (s.t <= (i + 1) * rowMs || i === rowCount - 1));
    const prev = samples.filter((s) => s.t <= i * rowMs).at(-1)?.unexpected ?? 0;
    const row = rows[i];
    const seconds = Math.max(1, Math.min(rowMs, Math.min(lastT, runMs) - i * rowMs)) / 1000;
    return {
      at: rowMs >= 60_000 ? `${i + 1}` : `${((i + 1) * rowMs) / 1000} s`,
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
}

/** Statuses by kind of request; each tolerated and unexpected one with its reason and first bodies. */
function printStatuses(statuses: Statuses, soakStart: number): void {
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
    console.log(
      `\nUNEXPECTED: ${f.count} × ${f.kind} ${f.status} ${f.code} ${f.why} (first at ${Math.round((f.firstAt - soakStart) / 1000)} s, last at ${Math.round((f.lastAt - soakStart) / 1000)} s)`,
    );
    for (const s of f.samples) console.log(`  ${s}`);
  }
}
