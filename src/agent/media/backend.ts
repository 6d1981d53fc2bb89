// A real media node: nginx with the RTMP module, configured from the node's role and the parent
// the control plane names, supervised by the agent. Its stat page is read at every heartbeat;
// a crash is reported (ready:false with the reason) and nginx restarted with backoff; a node
// that cannot get nginx back stays not ready and goes FAULT on its STARTED timeout.
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { systemMetrics } from '../system-metrics.js';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Listener } from '../../domain/records.js';
import type { Role } from '../../domain/vocabulary.js';
import type { BackendReport, MediaBackend, NodeOrders, TranscodeJob } from '../backend.js';
import { nodePaths, renderNginxConfig, type NginxNode } from './nginx-config.js';
import { describeExit, fetchStat, NginxProcess, NginxStartError } from './nginx-process.js';
import { freePorts, waitFree } from './ports.js';
import { alive, cmdline } from '../../os/process-group.js';
import { mergeSummaries, parseRtmpStat, type StatSummary, type StreamReading, streamMediaOf, summarize } from './rtmp-stat.js';
import { jobFiles, jobProblem, renderExecScript, renderJobScript } from './transcode.js';
import type { AdmissionGate } from '../admission/gate.js';
import { AdmissionCallbacks } from '../admission/callbacks.js';

const urlHost = (address: string) => (address.includes(':') ? `[${address}]` : address);

/** The node as nginx's config describes it (its parent comes later, in heartbeat replies), and the binaries. */
export interface NginxBackendOptions extends Omit<NginxNode, 'parent' | 'user' | 'admissionPort'> {
  nginx: string;
  ffmpeg: string;
  /** Who may publish and play here (docs/security.md): nginx asks it through the agent's callbacks. */
  gate: AdmissionGate;
  log(msg: string, extra?: Record<string, unknown>): void;
}

const PUBLISHERS: ReadonlySet<Role> = new Set(['origin', 'transcoder']);
const SUBSCRIBERS: ReadonlySet<Role> = new Set(['edge', 'origin', 'relay']);
const PULLS: ReadonlySet<Role> = new Set(['edge', 'relay']);
/** Restart delays after a crash; the count starts again once nginx has stayed up this long. */
const BACKOFF_MS = [250, 500, 1000, 2000, 4000, 8000, 10_000];
const STABLE_MS = 30_000;

export class NginxRtmpBackend implements MediaBackend {
  readonly address: string;
  private readonly paths: ReturnType<typeof nodePaths>;
  private readonly process: NginxProcess;
  private rtmpPort: number;
  private statPort: number;
  private parent: { nodeId: string; address: string; port: number; credential?: string } | null = null;
  private readonly callbacks: AdmissionCallbacks;
  private jobs = new Map<string, { shape: string; script: string }>();
  /** Why nginx is not serving, while it is not. */
  private problem: string | null = 'starting';
  /** A crash not yet reported: the next heartbeat says so even if nginx is already back. */
  private unreported: string | null = null;
  private stopped = false;
  private startedAt = 0;
  private crashes = 0;
  private restartTimer: NodeJS.Timeout | null = null;
  /** Operations on the nginx process one at a time: start, reload, restart, stop. */
  private queue: Promise<unknown> = Promise.resolve();
  /** What workers of an older config were carrying when the config changed (see mergeSummaries). */
  private older: StatSummary | null = null;
  private lastSummary: StatSummary | null = null;
  private lastWorker: number | null = null;
  private lastBytes: { at: number; in: number; out: number } | null = null;
  /** Each stream's counters at the last report: its bit rates are taken against them. */
  private streamReadings = new Map<string, StreamReading>();
  private ignoredLogged = new Set<string>();

  constructor(private readonly o: NginxBackendOptions) {
    this.address = o.address;
    this.rtmpPort = o.rtmpPort;
    this.statPort = o.statPort;
    this.paths = nodePaths(o.dir);
    this.process = new NginxProcess(o.nginx, o.dir);
    this.process.onExit = (exit) => this.crashed(`nginx ${describeExit(exit)}`);
    this.callbacks = new AdmissionCallbacks({
      gate: o.gate,
      scope: o.scope,
      log: o.log,
      // As nginx-rtmp writes the pull's URL in the notification of its local publish.
      pullingFrom: () => (this.parent ? `${urlHost(this.parent.address)}:${this.parent.port}/${o.scope}` : null),
    });
  }

  private serial<T>(op: () => Promise<T>): Promise<T> {
    const next = this.queue.then(op, op);
    this.queue = next.catch(() => undefined);
    return next;
  }

  async start(): Promise<void> {
    // Jobs come with every heartbeat reply; files left by an earlier agent of this node are stale.
    rmSync(this.paths.jobs, { recursive: true, force: true });
    for (const d of [this.o.dir, this.paths.tmp]) mkdirSync(d, { recursive: true });
    if (this.o.role === 'transcoder') {
      mkdirSync(this.paths.jobs, { recursive: true });
      writeFileSync(this.paths.transcodeScript, renderExecScript(this.paths.jobs), { mode: 0o755 });
    }
    await this.process.stopStale();
    await this.callbacks.start();
    await this.serial(async () => {
      try {
        await this.launch();
      } catch (err) {
        // Not fatal: the agent reports why and keeps trying, so the control plane sees the node.
        this.crashed((err as Error).message);
      }
    });
  }

  /** Picks free ports (its own first), writes the config and starts nginx. */
  private async launch(): Promise<void> {
    const wanted = [this.o.rtmpPort, this.o.statPort];
    // A previous nginx of this node may still be letting go of its ports.
    if (!(await waitFree(this.address, wanted, 1500))) {
      const other = await freePorts(this.address, Math.max(this.o.rtmpPort, this.o.statPort) + 1, 2);
      if (!other) throw new NginxStartError(`ports ${wanted.join(' and ')} on ${this.address} are taken and no others are free`);
      this.o.log('ports taken, using others', { wanted, using: other });
      [this.rtmpPort, this.statPort] = other as [number, number];
    } else {
      [this.rtmpPort, this.statPort] = wanted as [number, number];
    }
    this.writeConfig();
    await this.process.start(this.address, this.statPort);
    this.startedAt = Date.now();
    this.problem = null;
    this.older = null;
    this.lastWorker = null;
    this.o.log('nginx started', { pid: this.process.pid, rtmp: `${this.address}:${this.rtmpPort}`, stat: this.statPort });
  }

  private nginxNode(): NginxNode {
    return {
      nodeId: this.o.nodeId,
      role: this.o.role,
      scope: this.o.scope,
      address: this.address,
      rtmpPort: this.rtmpPort,
      statPort: this.statPort,
      dir: this.o.dir,
      modulePath: this.o.modulePath,
      parent: this.parent ? { address: this.parent.address, port: this.parent.port, ...(this.parent.credential !== undefined ? { credential: this.parent.credential } : {}) } : null,
      admissionPort: this.callbacks.port,
      // Workers (and the ffmpeg they exec) read the node's directory, which may sit under a
      // private one: as root, they run as the agent's own user rather than nginx's `nobody`.
      ...(process.getuid?.() === 0 ? { user: userInfo().username } : {}),
    };
  }

  private writeConfig(): void {
    const tmp = `${this.paths.config}.tmp`;
    writeFileSync(tmp, renderNginxConfig(this.nginxNode()));
    renameSync(tmp, this.paths.config);
  }

  private crashed(why: string): void {
    if (this.stopped) return;
    // A start that fails, or an nginx that dies young, waits longer each time; one that ran a while starts afresh.
    if (this.startedAt > 0 && Date.now() - this.startedAt > STABLE_MS) this.crashes = 0;
    this.startedAt = 0;
    const delay = BACKOFF_MS[Math.min(this.crashes, BACKOFF_MS.length - 1)]!;
    this.crashes++;
    this.problem = `${why}; restarting (attempt ${this.crashes})`;
    this.unreported = this.problem;
    this.older = null;
    this.lastSummary = null;
    this.o.log('nginx down', { why, restartInMs: delay, attempt: this.crashes });
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      void this.serial(async () => {
        if (this.stopped || this.process.pid !== null) return;
        try {
          await this.launch();
        } catch (err) {
          this.crashed((err as Error).message);
        }
      });
    }, delay);
  }

  private listeners(): BackendReport['listeners'] {
    const l: Listener = { protocol: 'rtmp', port: this.rtmpPort };
    return { ...(PUBLISHERS.has(this.o.role) ? { publish: l } : {}), ...(SUBSCRIBERS.has(this.o.role) ? { subscribe: l } : {}) };
  }

  async report(): Promise<BackendReport> {
    const down = (problem: string): BackendReport => ({
      ready: false,
      problem,
      listeners: this.listeners(),
      metrics: { ...systemMetrics(), 'connections.publisher': 0, 'connections.subscriber': 0, 'connections.clusterchildren': 0 },
      streams: [],
    });
    if (this.problem !== null || this.process.pid === null) {
      this.unreported = null;
      return down(this.problem ?? 'nginx is not running');
    }
    if (this.unreported !== null) {
      // Every connection was cut: one heartbeat out of rotation says so, and a flapping nginx stays out.
      const why = this.unreported.replace(/; restarting.*$/, '');
      this.unreported = null;
      return down(`${why}; restarted`);
    }
    let summary: StatSummary;
    let bytes: { in: number; out: number };
    try {
      const stat = parseRtmpStat(await fetchStat(this.address, this.statPort, 1000), this.o.scope);
      summary = summarize(stat);
      bytes = { in: stat.bytesIn, out: stat.bytesOut };
      this.lastWorker = stat.pid;
    } catch (err) {
      // nginx killed: the exit (and `crashed`, which says how) comes a moment after the refused fetch.
      if (await this.process.exitsWithin(1000)) {
        this.unreported = null;
        return down(this.problem ?? 'nginx is not running');
      }
      return down(`the stat page does not answer: ${(err as Error).message}`);
    }
    for (const name of summary.ignored) {
      if (this.ignoredLogged.has(name)) continue;
      this.ignoredLogged.add(name);
      this.o.log('stream name the control plane would refuse; not reported', { stream: name });
    }
    this.lastSummary = summary;
    if (this.older && this.process.olderWorkers(this.lastWorker).length === 0) this.older = null;
    const s = this.older ? mergeSummaries(summary, this.older) : summary;
    const now = Date.now();
    const rates: Record<string, number> = {};
    if (this.lastBytes && now > this.lastBytes.at && bytes.in >= this.lastBytes.in && bytes.out >= this.lastBytes.out) {
      const dt = (now - this.lastBytes.at) / 1000;
      rates['network.ingress'] = Math.round((bytes.in - this.lastBytes.in) / dt);
      rates['network.egress'] = Math.round((bytes.out - this.lastBytes.out) / dt);
    }
    this.lastBytes = { at: now, ...bytes };
    const streams = s.streams.map((x) => ({ name: x.name, publishing: x.publishing, subscribers: x.subscribers, ...(x.media ? streamMediaOf(x.media, this.streamReadings.get(x.name), now) : {}) }));
    this.streamReadings = new Map(s.streams.filter((x) => x.media).map((x) => [x.name, { at: now, bytesIn: x.media!.bytesIn, bytesOut: x.media!.bytesOut }]));
    return {
      ready: true,
      listeners: this.listeners(),
      metrics: {
        ...systemMetrics(),
        'connections.publisher': s.publishers,
        'connections.subscriber': s.subscribers,
        'connections.clusterchildren': s.children.length,
        ...rates,
      },
      streams,
    };
  }

  async apply(orders: NodeOrders): Promise<void> {
    if (PULLS.has(this.o.role)) {
      const next = orders.parent
        ? {
            nodeId: orders.parent.nodeId,
            address: orders.parent.address,
            port: orders.parent.port ?? this.o.rtmpPort,
            ...(orders.parent.credential !== undefined ? { credential: orders.parent.credential } : {}),
          }
        : null;
      // A new credential (twice a day) reloads like a new parent: the pull presents it.
      const same = (a: typeof next, b: typeof next) => a?.address === b?.address && a?.port === b?.port && a?.credential === b?.credential;
      if (!same(next, this.parent) && (next === null || next.address !== '')) {
        const before = this.parent;
        this.parent = next;
        this.o.log('parent changed', { from: before?.nodeId ?? null, to: next?.nodeId ?? null });
        await this.serial(() => this.reconfigure());
      }
    }
    if (this.o.role === 'transcoder' && orders.transcode) this.setJobs(orders.transcode);
    for (const stream of orders.drop?.streams ?? []) await this.dropPublisher(stream);
  }

  /** Disconnects a stream's publisher (its binding moved elsewhere or it was ended), through nginx-rtmp's control module. */
  private async dropPublisher(stream: string): Promise<void> {
    if (this.process.pid === null) return;
    const query = new URLSearchParams({ app: this.o.scope, name: stream });
    try {
      const res = await fetch(`http://${urlHost(this.address)}:${this.statPort}/control/drop/publisher?${query}`, { signal: AbortSignal.timeout(1000) });
      const dropped = (await res.text()).trim();
      this.o.log('publisher dropped', { stream, status: res.status, dropped });
    } catch (err) {
      this.o.log('could not drop a publisher', { stream, error: (err as Error).message });
    }
  }

  /**
   * Writes the config and reloads: new viewers get pulls from the new parent, viewers connected
   * to the old worker keep watching until they leave. If the reload does not take (no new worker
   * answers within 3 s), nginx is restarted.
   */
  private async reconfigure(): Promise<void> {
    if (this.stopped) return;
    if (this.process.pid === null) {
      this.writeConfig();
      return;
    }
    const before = this.lastWorker ?? (await this.currentWorker());
    const carried = this.lastSummary;
    this.writeConfig();
    if (this.process.reload()) {
      const deadline = Date.now() + 3000;
      while (Date.now() < deadline) {
        const now = await this.currentWorker();
        if (now !== null && now !== before) {
          this.lastWorker = now;
          if (carried && (carried.publishers > 0 || carried.subscribers > 0)) this.older = this.older ? mergeSummaries(carried, this.older) : carried;
          this.o.log('nginx reloaded', { worker: now });
          return;
        }
        await sleep(50);
      }
    }
    this.o.log('reload did not take; restarting nginx');
    await this.process.stop();
    try {
      await this.launch();
    } catch (err) {
      this.crashed((err as Error).message);
    }
  }

  private async currentWorker(): Promise<number | null> {
    try {
      return parseRtmpStat(await fetchStat(this.address, this.statPort, 500), this.o.scope).pid;
    } catch {
      return null;
    }
  }

  /**
   * Writes the job script of every stream to transcode and stops the ffmpeg of jobs that changed or
   * ended. A job whose credentials alone changed (twice a day) gets its script rewritten, and its
   * running ffmpeg, already admitted, is left alone.
   */
  private setJobs(jobs: readonly TranscodeJob[]): void {
    const next = new Map<string, { shape: string; script: string }>();
    for (const job of jobs) {
      const problem = jobProblem(job);
      if (problem) {
        this.o.log('transcode job refused', { stream: job.stream, problem });
        continue;
      }
      const files = jobFiles(this.paths.jobs, job.stream);
      const input = { job, scope: this.o.scope, self: { address: this.address, port: this.rtmpPort }, ffmpeg: this.o.ffmpeg, log: files.log };
      const { tokens: _tokens, ...bare } = job;
      next.set(job.stream, {
        shape: renderJobScript({ ...input, job: bare }),
        script: renderJobScript({ ...input, selfCredential: this.o.gate.selfCredential() }),
      });
    }
    for (const [stream, { shape, script }] of next) {
      const before = this.jobs.get(stream);
      if (before?.script === script) continue;
      const files = jobFiles(this.paths.jobs, stream);
      writeFileSync(`${files.script}.tmp`, script);
      renameSync(`${files.script}.tmp`, files.script);
      if (before?.shape === shape) continue;
      if (before) this.stopJob(stream);
      this.o.log('transcode job', { stream, renditions: jobs.find((j) => j.stream === stream)!.renditions.map((r) => r.name) });
    }
    for (const stream of this.jobs.keys()) {
      if (next.has(stream)) continue;
      rmSync(jobFiles(this.paths.jobs, stream).script, { force: true });
      this.stopJob(stream);
      this.o.log('transcode job ended', { stream });
    }
    this.jobs = next;
  }

  /** Stops a stream's running ffmpeg; nginx runs the exec script again, which waits for the current job. */
  private stopJob(stream: string): void {
    const files = jobFiles(this.paths.jobs, stream);
    let pid: number;
    try {
      pid = Number(readFileSync(files.pid, 'utf8').trim());
    } catch {
      return;
    }
    rmSync(files.pid, { force: true });
    if (!Number.isInteger(pid) || pid <= 1 || !alive(pid)) return;
    const cmd = cmdline(pid);
    if (!cmd.includes(this.paths.jobs) && !cmd.includes(`/${this.o.scope}/${stream}`)) return;
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      /* already gone */
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    await this.serial(() => this.process.stop());
    await this.callbacks.stop();
    await waitFree(this.address, [this.rtmpPort, this.statPort], 2000);
  }
}
