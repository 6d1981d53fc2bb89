// The soak's options (`npm run soak -- --minutes N …`) and the times derived from them: how long
// the run lasts, the warm-up left out of the growth figure, the windows compared, the table's rows,
// and the growth target the verdict holds the RSS to.

export interface SoakOptions {
  minutes: number;
  /** Of the capacity measured at the start: the rate the soak runs at. */
  fraction: number;
  connections: number;
  capacitySeconds: number;
  sampleSeconds: number;
  /** Heap snapshots of the service's main thread at the end of warm-up and at the end. */
  heapSnapshots: boolean;
}

/** The command line; throws on an unknown option or a value that is not a positive number. */
export function soakOptions(argv: string[]): SoakOptions {
  const o = { minutes: 5, fraction: 0.7, connections: 64, capacitySeconds: 10, sampleSeconds: 5, heapSnapshots: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = () => {
      const v = Number(argv[++i]);
      if (!Number.isFinite(v) || v <= 0) throw new Error(`${a} needs a positive number`);
      return v;
    };
    if (a === '--minutes') o.minutes = value();
    else if (a === '--fraction') o.fraction = value();
    else if (a === '--connections') o.connections = Math.round(value());
    else if (a === '--capacity-seconds') o.capacitySeconds = value();
    else if (a === '--sample-seconds') o.sampleSeconds = value();
    else if (a === '--heap-snapshots') o.heapSnapshots = true;
    else throw new Error(`unknown option ${a} (--minutes N, --fraction F, --connections C, --capacity-seconds S, --sample-seconds S, --heap-snapshots)`);
  }
  return o;
}

export interface SoakTimes {
  /** The soak load, after the capacity run. */
  runMs: number;
  /** Warm-up, excluded from the growth figure: the first 20 % of the run, at most 2 minutes. */
  warmupMs: number;
  /** The windows compared: the first after warm-up and the last, a minute each (less in short runs). */
  windowMs: number;
  /** One row of the table over time: a minute, or 10 s in runs shorter than 5 minutes. */
  rowMs: number;
}

export function soakTimes(o: SoakOptions): SoakTimes {
  const runMs = Math.round(o.minutes * 60_000);
  const warmupMs = Math.min(120_000, 0.2 * runMs);
  return { runMs, warmupMs, windowMs: Math.min(60_000, (runMs - warmupMs) / 3), rowMs: o.minutes >= 5 ? 60_000 : 10_000 };
}

/** The most the RSS may grow after warm-up, in %, for the soak to pass. */
export const TARGET_GROWTH = 5;
/** The capacity run's first seconds, not measured (JIT, heap sizes). */
export const CAPACITY_WARMUP_S = 5;
