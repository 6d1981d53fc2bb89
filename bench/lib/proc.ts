// Memory and CPU of a process under test: from the kernel (/proc/<pid>/status, /proc/<pid>/stat,
// /proc/stat) and from the service's own Prometheus metrics (prom-client's process and heap
// gauges, the node-group actors' heap gauge).
import { readFileSync } from 'node:fs';

const MiB = 2 ** 20;

export interface ProcMemory {
  /** Resident set, and its parts: anonymous (heaps, malloc), file-backed (code, LMDB's map), shared. */
  rss: number;
  anon: number;
  file: number;
  shmem: number;
  /** Peak resident set so far. */
  hwm: number;
  threads: number;
}

/** VmRSS and friends, in bytes; null when the process is gone. */
export function procMemory(pid: number): ProcMemory | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return null;
  }
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) * 1024;
  return { rss: kb('VmRSS'), anon: kb('RssAnon'), file: kb('RssFile'), shmem: kb('RssShmem'), hwm: kb('VmHWM'), threads: Number(/^Threads:\s+(\d+)/m.exec(text)?.[1] ?? NaN) };
}

/** CPU time of the whole machine (all cores), in clock ticks: busy and total. */
export function machineTicks(): { busy: number; total: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  return { busy: total - fields[3]! - fields[4]!, total };
}

/** CPU time of one process (every thread), in clock ticks; NaN when it is gone. */
export function processTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return NaN;
  }
}

/**
 * Shares of the machine's CPU since the last call: the processes watched, and everything else
 * (another job on a shared box shows here), in % of all cores.
 */
export function cpuShares(pids: readonly number[]): () => { watched: number[]; others: number } {
  let machine = machineTicks();
  let procs = pids.map(processTicks);
  return () => {
    const m = machineTicks();
    const p = pids.map(processTicks);
    const total = m.total - machine.total;
    const watched = p.map((t, i) => (total > 0 ? (100 * (t - procs[i]!)) / total : NaN));
    const others = total > 0 ? Math.max(0, (100 * (m.busy - machine.busy)) / total - watched.reduce((a, b) => a + (Number.isNaN(b) ? 0 : b), 0)) : NaN;
    machine = m;
    procs = p;
    return { watched, others };
  };
}

export interface ServiceMemory {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  /** Heap in use per node-group actor thread. */
  actorHeap: Record<string, number>;
  bindings: number;
  eventLoopLagP99: number;
  handles: number;
}

/** The figures this bench reads from a /metrics text. */
export function scrapeMemory(text: string): ServiceMemory {
  const one = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  const actorHeap: Record<string, number> = {};
  for (const m of text.matchAll(/^switchyard_actor_heap_bytes\{group="([^"]+)"\} (\S+)$/gm)) actorHeap[m[1]!] = Number(m[2]);
  let bindings = 0;
  for (const m of text.matchAll(/^switchyard_bindings\{[^}]*\} (\S+)$/gm)) bindings += Number(m[1]);
  return {
    rss: one('switchyard_process_resident_memory_bytes'),
    heapUsed: one('switchyard_nodejs_heap_size_used_bytes'),
    heapTotal: one('switchyard_nodejs_heap_size_total_bytes'),
    external: one('switchyard_nodejs_external_memory_bytes'),
    actorHeap,
    bindings,
    eventLoopLagP99: one('switchyard_nodejs_eventloop_lag_p99_seconds'),
    handles: one('switchyard_nodejs_active_handles_total'),
  };
}

export const mib = (bytes: number) => Math.round((bytes / MiB) * 10) / 10;

/** The median of the finite values (NaN when there are none). */
export function median(values: readonly number[]): number {
  const s = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Least-squares slope of y over x (per unit of x). */
export function slope(points: ReadonlyArray<readonly [number, number]>): number {
  const n = points.length;
  if (n < 2) return NaN;
  let sx = 0;
  let sy = 0;
  for (const [x, y] of points) {
    sx += x;
    sy += y;
  }
  const mx = sx / n;
  const my = sy / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? NaN : num / den;
}
