// Reading the byte counters of the node's clients from Janus's admin API, once per heartbeat
// (the engine's refresh(), which the WebRTC backend awaits before each report): one `handle_info`
// per publisher and viewer handle (handle-bytes.ts reads the answers), a few at a time, all within
// one deadline. Whatever fails (Janus down, a slow or wrong answer, a handle just gone) is left
// out: the handle keeps its last reading, and the heartbeat goes with what was read.
//
// A plain HTTP POST, not janode's admin mode: the admin API is served over HTTP only
// (config.ts: Janus's readiness is asked there too, process.ts), and janode speaks WebSocket or
// Unix sockets; a second transport for the admin API would be one more listener for nothing.
import { type CountedHandle, type HandleBytes, handleBytes, StreamBytes } from './handle-bytes.js';

/** Where the admin API answers, while Janus serves. */
export interface AdminEndpoint {
  /** `http://<control address>:<admin port>/admin` */
  url: string;
  secret: string;
}

/** A handle to read: the engine's session, and Janus's ids of its session and handle (janode's). */
export interface ReadableHandle extends CountedHandle {
  janusSession: number;
  janusHandle: number;
}

export interface AdminStatsOptions {
  admin: () => AdminEndpoint | null;
  log(msg: string, extra?: Record<string, unknown>): void;
  /** All of a round's calls end by then (a slow Janus delays the heartbeat this much at most). */
  roundMs?: number;
  /** Calls in flight at once. */
  concurrency?: number;
}

const ROUND_MS = 1000;
const CONCURRENCY = 4;
/** A handle_info answer is a few kB: one past this is not read. */
const MAX_ANSWER_BYTES = 256 * 1024;

/** Janus's error codes for a session or handle it does not have (janus/apierror.h). */
const NO_SUCH_SESSION = 458;
const NO_SUCH_HANDLE = 459;

const janusId = (v: number) => Number.isSafeInteger(v) && v > 0;

export class AdminStats {
  private readonly bytes = new StreamBytes();
  /** When each handle was last read: the least recently read go first, so a round cut short moves on next time. */
  private readonly readAt = new Map<string, number>();
  private round = 0;
  private failing: string | null = null;

  constructor(private readonly o: AdminStatsOptions) {}

  /** A stream's bytes in (its publisher's) and out (its viewers'), ever, once a handle of it has been read. */
  of(stream: string): { bytesIn: number; bytesOut: number } | undefined {
    return this.bytes.of(stream);
  }

  /** Janus restarted: its counters went with it. */
  clear(): void {
    this.bytes.clear();
    this.readAt.clear();
  }

  /** Reads the handles' counters, within the round's deadline; never throws. */
  async poll(handles: readonly ReadableHandle[]): Promise<void> {
    const round = ++this.round;
    const readings = new Map<string, HandleBytes>();
    const admin = this.o.admin();
    if (admin && handles.length > 0) {
      const queue = [...handles].filter((h) => janusId(h.janusSession) && janusId(h.janusHandle)).sort((a, b) => (this.readAt.get(a.id) ?? 0) - (this.readAt.get(b.id) ?? 0));
      const signal = AbortSignal.timeout(this.o.roundMs ?? ROUND_MS);
      let failure: string | null = null;
      const worker = async () => {
        for (let h = queue.shift(); h && !signal.aborted; h = queue.shift()) {
          try {
            const r = await this.handleInfo(admin, h, signal);
            if (r) {
              readings.set(h.id, r);
              this.readAt.set(h.id, round);
            }
          } catch (err) {
            failure ??= signal.aborted ? `no answer within ${this.o.roundMs ?? ROUND_MS} ms` : (err as Error).message;
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(this.o.concurrency ?? CONCURRENCY, queue.length) }, worker));
      if (signal.aborted && queue.length > 0) failure ??= `no answer within ${this.o.roundMs ?? ROUND_MS} ms`;
      this.report(failure);
    }
    const live = new Set(handles.map((h) => h.id));
    for (const id of this.readAt.keys()) if (!live.has(id)) this.readAt.delete(id);
    this.bytes.update(handles, readings);
  }

  /** One handle's counters; null when Janus says it has no such handle (it ended meanwhile). */
  private async handleInfo(admin: AdminEndpoint, h: ReadableHandle, signal: AbortSignal): Promise<HandleBytes | null> {
    const res = await fetch(`${admin.url}/${h.janusSession}/${h.janusHandle}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ janus: 'handle_info', transaction: `stats-${h.janusHandle}`, admin_secret: admin.secret }),
      signal,
    });
    if (Number(res.headers.get('content-length')) > MAX_ANSWER_BYTES) throw new Error(`janus's handle_info answer is ${res.headers.get('content-length')} bytes long`);
    const text = await res.text();
    if (text.length > MAX_ANSWER_BYTES) throw new Error(`janus's handle_info answer is ${text.length} bytes long`);
    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch {
      throw new Error(`janus's handle_info answer is not JSON (HTTP ${res.status})`);
    }
    const counted = handleBytes(answer);
    if (counted) return counted;
    const error = (answer as { error?: { code?: unknown; reason?: unknown } } | null)?.error;
    // The client's session or handle ended since the engine listed it: nothing to read, nothing wrong.
    if (error?.code === NO_SUCH_SESSION || error?.code === NO_SUCH_HANDLE) return null;
    throw new Error(`janus answered handle_info with ${JSON.stringify(answer).slice(0, 200)}`);
  }

  /** Logs the first failure of a run of them, and the recovery. */
  private report(failure: string | null): void {
    if (failure !== null && this.failing === null) this.o.log('could not read janus counters: bit rates are left out until it answers', { error: failure });
    if (failure === null && this.failing !== null) this.o.log('janus counters read again');
    this.failing = failure;
  }
}
