// One actor's worker thread, supervised: started (or adopted, loaded in advance), its calls
// guarded so that a call to a thread that died fails at once (comlink.ts), its events port
// wired, and restarted after it dies, backing off from 100 ms to 5 s. The group handles
// (group-handle.ts) and the host's supervisor (host.ts) are both one of these, with their own
// start-up call and their own account of crashes.
import { MessageChannel, type MessagePort, Worker } from 'node:worker_threads';
import type { EventBatch } from '../src/domain/events.js';
import { guardedRemote, InFlight, nodeEndpoint } from './comlink.js';

export type Remote<Api> = ReturnType<typeof guardedRemote<Api>>;

/** A thread loaded in advance (spare.ts), to be adopted instead of a new one. */
export interface ReadyThread<Api> {
  worker: Worker;
  api: Remote<Api>;
  inFlight: InFlight;
}

export interface WorkerSpec<Api> {
  /** The thread's name (in stack traces and the inspector). */
  name: string;
  /** What it is, to begin a reason with ('the actor', 'the supervisor'). */
  what: string;
  /** Its entry file. */
  entry: URL;
  /** The error its calls fail with while it is down, or after it died. */
  unavailable(): Error;
  /** A thread loaded in advance, if there is one. */
  adopt?(): Promise<ReadyThread<Api> | null>;
  /** Its first call, given the port its events leave on: the thread serves once it settles. */
  init(api: Remote<Api>, events: MessagePort): Promise<void>;
  /** Once it serves: wiring to others (a failure ends the thread and starts it again). */
  connect?(api: Remote<Api>): Promise<void>;
  /** Its events, in batches as it posted them. */
  onEvents(batch: EventBatch): void;
  /** The thread ended or failed to start: it will be started again in `delayMs`. */
  onDown(reason: string, delayMs: number): void;
  /** It was started again after going down `downMs` ago. */
  onRestarted(downMs: number): void;
  onError(err: Error): void;
  /** Whether a thread that went down is to be started again now. */
  mayRestart(): boolean;
}

export class SupervisedWorker<Api> {
  private worker: Worker | null = null;
  private remote: Remote<Api> | null = null;
  private closing = false;
  private restarts = 0;
  private downSince = 0;
  private restartTimer: NodeJS.Timeout | null = null;
  /** A test's hold on the next restart (crash). */
  private restartHeld: Promise<unknown> | null = null;
  /** The thread answers. */
  running = false;

  constructor(private readonly spec: WorkerSpec<Api>) {}

  /** The thread's API while it runs. */
  get api(): Remote<Api> | null {
    return this.running ? this.remote : null;
  }

  /** Its thread exists (starting, running or closing). */
  get exists(): boolean {
    return this.worker !== null;
  }

  /**
   * Starts (or adopts) the thread and makes its first call; `connect` runs once it answers. A thread
   * that cannot start or be connected is ended and started again later, with this reason.
   */
  async start(): Promise<void> {
    let worker: Worker | undefined;
    try {
      const ready = (await this.spec.adopt?.()) ?? null;
      worker = ready?.worker ?? new Worker(this.spec.entry, { name: this.spec.name });
      // A thread loaded in advance did not keep the process alive until now (spare.ts).
      worker.ref();
      this.worker = worker;
      const w = worker;
      const inFlight = ready?.inFlight ?? new InFlight();
      const api = ready?.api ?? guardedRemote<Api>(nodeEndpoint(w), inFlight);
      const events = new MessageChannel();
      events.port1.on('message', (batch: EventBatch) => this.spec.onEvents(batch));
      w.once('exit', (code) => {
        events.port1.close();
        inFlight.fail(this.spec.unavailable());
        if (this.worker === w) this.exited(code);
      });
      w.on('error', (err) => this.spec.onError(err));
      await this.spec.init(api, events.port2);
      this.remote = api;
      this.running = true;
      await this.spec.connect?.(api);
      if (this.closing) throw this.spec.unavailable();
    } catch (err) {
      this.running = false;
      this.remote = null;
      if (worker && this.worker === worker) {
        this.worker = null;
        await worker.terminate();
      }
      this.scheduleRestart(`${this.spec.what} did not start: ${(err as Error).message}`);
      throw err;
    }
  }

  private exited(code: number): void {
    this.running = false;
    this.remote = null;
    this.worker = null;
    this.scheduleRestart(`${this.spec.what} thread exited with code ${code}`);
  }

  /** One restart at a time, backing off to 5 s; an attempt that fails schedules the next. */
  private scheduleRestart(reason: string): void {
    if (this.closing || this.restartTimer || !this.spec.mayRestart()) return;
    if (this.restarts === 0) this.downSince = Date.now();
    const delay = Math.min(5000, 100 * 2 ** this.restarts++);
    this.spec.onDown(reason, delay);
    this.restartTimer = setTimeout(async () => {
      this.restartTimer = null;
      const held = this.restartHeld;
      this.restartHeld = null;
      await held?.catch(() => {});
      if (this.closing) return;
      this.start().then(
        () => {
          this.restarts = 0;
          this.spec.onRestarted(Date.now() - this.downSince);
        },
        (err: Error) => this.spec.onError(err),
      );
    }, delay);
    this.restartTimer.unref();
  }

  /** No restart pending is kept, and the count of restarts starts again (cluster mode: a group let go). */
  forgetRestarts(): void {
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = null;
    this.restarts = 0;
  }

  /**
   * Ends the thread as a crash would (tests of recovery). A test that asserts what is answered
   * while the thread is down holds its restart until `holdRestartUntil` settles: without it, how
   * long the thread stays down is the machine's timing (~0.1 s plus a thread's start).
   */
  async crash(holdRestartUntil?: Promise<unknown>): Promise<void> {
    this.restartHeld = holdRestartUntil ?? null;
    await this.worker?.terminate();
  }

  /** No more restarts; a start under way gives up. */
  close(): void {
    this.closing = true;
    this.forgetRestarts();
  }

  /** Restarts are allowed again (cluster mode: a group acquired again). */
  reopen(): void {
    this.closing = false;
  }

  /**
   * Ends the thread now; calls fail at once, then `farewell` runs (with the API if it was running:
   * a last call). It may be started again.
   */
  async end(farewell?: (api: Remote<Api> | null) => Promise<unknown>): Promise<void> {
    const api = this.running ? this.remote : null;
    this.running = false;
    this.remote = null;
    if (farewell) await farewell(api).catch(() => {});
    const w = this.worker;
    this.worker = null;
    await w?.terminate();
  }
}
