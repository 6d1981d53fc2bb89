// The soak's samples of the service: its memory from the kernel (/proc) and from its own metrics
// (main and actor heaps, bindings, event-loop lag), the size of its LMDB file, the unexpected
// statuses so far, and the machine's CPU shared between the service, this load generator and
// everything else. Also the heap snapshots asked of the service's main thread (--heap-snapshots).
import { statSync } from 'node:fs';
import { cpuShares, procMemory, scrapeMemory } from './proc.js';
import type { Statuses } from './statuses.js';

export interface Sample {
  t: number;
  rss: number;
  anon: number;
  file: number;
  rssMetric: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  actorHeap: number;
  actorHeapSoak: number;
  bindings: number;
  lagP99: number;
  handles: number;
  threads: number;
  dbBytes: number;
  unexpected: number;
  /** % of the machine's CPU (all cores) since the last sample: the service, this load generator, everything else. */
  cpuService: number;
  cpuBench: number;
  cpuOthers: number;
}

export interface SamplerOptions {
  /** The service's process. */
  pid: number;
  url: string;
  /** Its LMDB data file. */
  dbFile: string;
  /** The group whose actor's heap is `actorHeapSoak`. */
  group: string;
  statuses: Statuses;
}

export class Sampler {
  readonly samples: Sample[] = [];
  /** What the samples' times count from. */
  private from = Date.now();
  private readonly cpu: ReturnType<typeof cpuShares>;

  constructor(private readonly o: SamplerOptions) {
    this.cpu = cpuShares([o.pid, process.pid]);
  }

  /** The soak starts at `at`: later samples count from it, those made before it are at 0. */
  begin(at: number): void {
    this.from = at;
    for (const s of this.samples) s.t = 0;
  }

  /** Adds a sample, unless the service is gone or its metrics did not answer (which is recorded). */
  async sample(): Promise<void> {
    const { pid, url, statuses } = this.o;
    const proc = procMemory(pid);
    if (!proc) return;
    const shares = this.cpu();
    let m: ReturnType<typeof scrapeMemory>;
    try {
      const res = await fetch(`${url}/as/v1/metrics`);
      const text = await res.text();
      statuses.record('metrics', res.status, res.status === 200 ? 'ok' : 'unexpected', '', text);
      if (res.status !== 200) return;
      m = scrapeMemory(text);
    } catch (err) {
      statuses.record('metrics', 'socket error', 'unexpected', (err as Error).message);
      return;
    }
    const actor = Object.values(m.actorHeap).reduce((a, b) => a + b, 0);
    let dbBytes = NaN;
    try {
      dbBytes = statSync(this.o.dbFile).size;
    } catch {
      /* not there yet */
    }
    this.samples.push({
      t: Date.now() - this.from,
      rss: proc.rss,
      anon: proc.anon,
      file: proc.file,
      rssMetric: m.rss,
      heapUsed: m.heapUsed,
      heapTotal: m.heapTotal,
      external: m.external,
      actorHeap: actor,
      actorHeapSoak: m.actorHeap[this.o.group] ?? NaN,
      bindings: m.bindings,
      lagP99: m.eventLoopLagP99,
      handles: m.handles,
      threads: proc.threads,
      dbBytes,
      unexpected: statuses.unexpectedTotal,
      cpuService: shares.watched[0]!,
      cpuBench: shares.watched[1]!,
      cpuOthers: shares.others,
    });
  }
}

/**
 * Heap snapshots of the service's main thread, written by the service itself into its diagnostic
 * directory on SIGUSR2 (it runs with --heapsnapshot-signal); nothing is taken when not `enabled`.
 */
export class HeapSnapshots {
  /** What was taken, and when in the soak. */
  readonly taken: string[] = [];

  constructor(
    private readonly pid: number,
    private readonly enabled: boolean,
    private readonly soakStart: number,
  ) {}

  take(label: string): void {
    if (!this.enabled) return;
    process.kill(this.pid, 'SIGUSR2');
    this.taken.push(`${label} at ${Math.round((Date.now() - this.soakStart) / 1000)} s`);
  }
}
