// Lookup load against a cluster's instances, as a load balancer would send it: each request goes
// to the next running instance; one whose connection is refused or reset (a killed or stopping
// instance) is retried on the next, as a balancer does. Every answer is recorded, and every
// acknowledged binding (a 200 to a publish lookup) kept to be checked afterwards.
import type { Instance } from './cluster.js';

export interface Answer {
  at: number;
  ms: number;
  status: number;
  code?: string;
  retryAfter?: string | null;
  stream: string;
  nodeId?: string;
  via: string;
  fresh: boolean;
}

export class LookupLoad {
  readonly answers: Answer[] = [];
  /** stream → the origin a publish lookup answered (acknowledged, hence durable). */
  readonly acknowledged = new Map<string, string>();
  private running = false;
  private loops: Promise<void>[] = [];
  private next = 0;
  private n = 0;

  constructor(
    private readonly targets: () => Instance[],
    private readonly token: string,
    private readonly group: string,
    private readonly prefix = 's',
  ) {}

  start(concurrency = 4, pauseMs = 10): void {
    this.running = true;
    for (let i = 0; i < concurrency; i++) this.loops.push(this.loop(pauseMs));
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  /** Answers since `t` (ms, Date.now()). */
  since(t: number): Answer[] {
    return this.answers.filter((a) => a.at >= t);
  }

  private async loop(pauseMs: number): Promise<void> {
    while (this.running) {
      // Half new streams (a write: only the owner can bind), half streams already bound (a read).
      const known = [...this.acknowledged.keys()];
      const fresh = known.length === 0 || this.n % 2 === 0;
      const stream = fresh ? `${this.prefix}${this.n}` : known[this.n % known.length]!;
      this.n++;
      await this.one(stream, fresh);
      await new Promise((r) => setTimeout(r, pauseMs));
    }
  }

  private async one(stream: string, fresh: boolean): Promise<void> {
    for (let attempt = 0; attempt < 6; attempt++) {
      const targets = this.targets();
      if (targets.length === 0) return;
      const target = targets[this.next++ % targets.length]!;
      const started = Date.now();
      let res: Response;
      try {
        res = await fetch(`${target.url}/as/v1/streams/live/${stream}/publish?nodeGroup=${this.group}`, { headers: { authorization: `Bearer ${this.token}` }, signal: AbortSignal.timeout(15_000) });
      } catch (err) {
        // Refused or reset: the balancer tries another instance. A timeout is a hang: recorded.
        if ((err as Error).name === 'TimeoutError') {
          this.answers.push({ at: started, ms: Date.now() - started, status: 0, code: 'HANG', stream, via: target.id, fresh });
          return;
        }
        continue;
      }
      const text = await res.text();
      let json: { nodeId?: string; code?: string } = {};
      try {
        json = JSON.parse(text) as typeof json;
      } catch {
        /* not JSON */
      }
      const a: Answer = { at: started, ms: Date.now() - started, status: res.status, stream, via: target.id, fresh, retryAfter: res.headers.get('retry-after') };
      if (json.code) a.code = json.code;
      if (json.nodeId) a.nodeId = json.nodeId;
      this.answers.push(a);
      if (res.status === 200 && json.nodeId) {
        const before = this.acknowledged.get(stream);
        // A stream answered twice with different origins is checked by the test (bound twice?).
        if (before && before !== json.nodeId) this.conflicts.push({ stream, first: before, second: json.nodeId });
        else this.acknowledged.set(stream, json.nodeId);
      }
      return;
    }
  }

  /** Streams answered with two different origins: a stream bound twice. */
  readonly conflicts: Array<{ stream: string; first: string; second: string }> = [];
}

/** Answers that are not what a client may get while a group moves: anything but 200, or 503 NOT_READY/STORE_UNAVAILABLE with Retry-After. */
export function unexpected(answers: readonly Answer[]): Answer[] {
  return answers.filter((a) => a.status !== 200 && !(a.status === 503 && (a.code === 'NOT_READY' || a.code === 'STORE_UNAVAILABLE') && a.retryAfter));
}
