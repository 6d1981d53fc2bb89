// Simulated node agents for a static fleet, and the publishers of its live streams. Every
// heartbeat period each agent that is not silenced posts its event: origins list the streams
// published on them, edges the streams their viewers asked for over the last few periods (a
// viewer "watches" that long), with counts. Silencing an agent makes the service put its node in
// FAULT after nodeTimeout; the publishers of an origin that went silent ask for an origin again
// every period until they get another one (or their origin comes back), as a real encoder would.
import { BENCH_NODE_TOKEN_TTL } from './servers.js';
import type { TokenSigner } from '../../src/auth/tokens.js';
import type { Statuses } from './statuses.js';

export interface NodeSpec {
  id: string;
  role: 'origin' | 'edge';
  region: string;
}

interface SimNode extends NodeSpec {
  group: string;
  authorization: string;
  /** Not posting (a simulated crash or network cut); the service will fault it. */
  silenced: boolean;
  /** Retired by the bench (drained, doomed, its group deleted): a 404 or a 401 is then its expected end. */
  retiring: boolean;
  /** Stopped for good (its 404 came). */
  stopped: boolean;
  inFlight: boolean;
  /** Origins: the streams published here. */
  publishing: Set<string>;
  /** Edges: viewers handed here, per heartbeat period, newest first. */
  views: Array<Map<string, number>>;
  /** Called with the status of the next answered heartbeat. */
  onBeat: Array<(status: number) => void>;
}

export class Fleet {
  private readonly nodes = new Map<string, SimNode>();
  private timer: NodeJS.Timeout | null = null;
  private readonly inFlight = new Set<Promise<void>>();
  /** Called once per heartbeat period, after the heartbeats are sent. */
  onTick: (now: number) => void = () => {};

  constructor(
    private readonly url: string,
    private readonly signer: TokenSigner,
    private readonly statuses: Statuses,
    readonly heartbeatMs: number,
    private readonly viewPeriods = 5,
  ) {}

  add(group: string, specs: readonly NodeSpec[]): void {
    for (const s of specs) {
      this.nodes.set(s.id, {
        ...s,
        group,
        authorization: `Bearer ${this.signer.nodeToken(group, s.id, BENCH_NODE_TOKEN_TTL)}`,
        silenced: false,
        retiring: false,
        stopped: false,
        inFlight: false,
        publishing: new Set(),
        views: Array.from({ length: this.viewPeriods }, () => new Map()),
        onBeat: [],
      });
    }
  }

  remove(ids: readonly string[]): void {
    for (const id of ids) this.nodes.delete(id);
  }

  ids(filter: (n: NodeSpec & { group: string }) => boolean = () => true): string[] {
    return [...this.nodes.values()].filter((n) => !n.stopped && filter(n)).map((n) => n.id);
  }

  has(id: string): boolean {
    return this.nodes.has(id);
  }

  isSilenced(id: string): boolean {
    return this.nodes.get(id)?.silenced ?? false;
  }

  start(): void {
    this.timer ??= setInterval(() => this.tick(), this.heartbeatMs);
  }

  /** Stops the heartbeats and waits for those in flight. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await Promise.allSettled([...this.inFlight]);
  }

  /** Posts one heartbeat for every live agent now (and resolves when all are answered). */
  async beatAll(): Promise<void> {
    await Promise.allSettled([...this.nodes.values()].map((n) => this.beat(n)));
  }

  private tick(): void {
    for (const n of this.nodes.values()) void this.beat(n);
    this.onTick(Date.now());
  }

  silence(id: string): void {
    this.nodes.get(id)!.silenced = true;
  }

  /** Lets the agent post again, at once; resolves with the status of its first answered heartbeat. */
  resume(id: string): Promise<number> {
    const n = this.nodes.get(id)!;
    n.silenced = false;
    const answered = new Promise<number>((resolve) => n.onBeat.push(resolve));
    void this.beat(n);
    return answered;
  }

  retire(id: string): void {
    const n = this.nodes.get(id);
    if (n) n.retiring = true;
  }

  publish(origin: string, stream: string): void {
    this.nodes.get(origin)?.publishing.add(stream);
  }

  unpublish(origin: string, stream: string): void {
    this.nodes.get(origin)?.publishing.delete(stream);
  }

  /** A viewer was sent to `edge` for `stream`. */
  viewed(edge: string, stream: string): void {
    const views = this.nodes.get(edge)?.views[0];
    if (views) views.set(stream, (views.get(stream) ?? 0) + 1);
  }

  private body(n: SimNode): string {
    if (n.role === 'origin') {
      return JSON.stringify({
        ready: true,
        metrics: { 'connections.publisher': n.publishing.size, 'cpu.load': 0.1 },
        streams: [...n.publishing].map((name) => ({ name, publishing: true })),
      });
    }
    const watching = new Map<string, number>();
    for (const period of n.views) for (const [stream, count] of period) watching.set(stream, (watching.get(stream) ?? 0) + count);
    // The oldest period's viewers leave; a new period starts.
    n.views.pop();
    n.views.unshift(new Map());
    let viewers = 0;
    for (const c of watching.values()) viewers += c;
    return JSON.stringify({
      ready: true,
      metrics: { 'connections.subscriber': viewers, 'cpu.load': 0.1 },
      streams: [...watching].map(([name, subscribers]) => ({ name, subscribers })),
    });
  }

  private beat(n: SimNode): Promise<void> {
    if (n.silenced || n.stopped || n.inFlight) return Promise.resolve();
    n.inFlight = true;
    const done = (async () => {
      let status = 0;
      try {
        const res = await fetch(`${this.url}/as/v1/nodes/${n.id}/events`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: n.authorization },
          body: this.body(n),
        });
        const text = await res.text();
        status = res.status;
        if (res.status === 200) this.statuses.record('heartbeat', 200, 'ok');
        else if ((res.status === 404 || res.status === 401) && n.retiring) {
          // The agent of a node the bench retired learns that its node is gone (404), or that its
          // tokens went with it (401: a destroyed node's tokens are revoked), and stops.
          this.statuses.record('heartbeat (retired node)', res.status, 'ok');
          n.stopped = true;
        } else this.statuses.record('heartbeat', res.status, 'unexpected', `node ${n.id} (${n.group})`, text);
      } catch (err) {
        this.statuses.record('heartbeat', 'socket error', 'unexpected', (err as Error).message);
      } finally {
        n.inFlight = false;
        for (const resolve of n.onBeat.splice(0)) resolve(status);
      }
    })();
    this.inFlight.add(done);
    void done.finally(() => this.inFlight.delete(done));
    return done;
  }
}

interface Live {
  name: string;
  origin: string;
  endsAt: number;
  /** Its origin went silent: subscribers may get 503 NO_CAPACITY until its publisher has moved. */
  disturbed: boolean;
  /** Answers to requests sent while disturbed may still arrive until then. */
  graceUntil: number;
  retrying: boolean;
}

/**
 * The live streams: publishers that asked for an origin (a publish lookup of a new name) and then
 * published there for a while. Subscribe lookups pick among them; when one ends its origin stops
 * listing it, and the service unbinds it after streamTimeout.
 */
export class LiveStreams {
  private readonly list: string[] = [];
  private readonly index = new Map<string, number>();
  private readonly live = new Map<string, Live>();
  started = 0;
  ended = 0;
  moved = 0;

  constructor(
    private readonly fleet: Fleet,
    private readonly target: number,
    private readonly lifetimeMs: [number, number],
    /** A publish lookup, answered with the origin's node id (or null when it failed). */
    private readonly lookup: (stream: string) => Promise<string | null>,
    private readonly graceMs = 2000,
  ) {}

  get size(): number {
    return this.list.length;
  }

  wanted(): boolean {
    return this.list.length < this.target;
  }

  /** A live stream, at random; undefined when none is. */
  pick(): string | undefined {
    return this.list.length === 0 ? undefined : this.list[Math.floor(Math.random() * this.list.length)];
  }

  /** A publisher got `origin` for a new stream and starts publishing there. */
  begin(name: string, origin: string, now: number): void {
    if (this.live.has(name) || !this.wanted()) return;
    const [min, max] = this.lifetimeMs;
    this.live.set(name, { name, origin, endsAt: now + min + Math.random() * (max - min), disturbed: this.fleet.isSilenced(origin), graceUntil: 0, retrying: false });
    this.index.set(name, this.list.length);
    this.list.push(name);
    this.fleet.publish(origin, name);
    this.started++;
  }

  /** A publish lookup for a live stream answered `origin`: if it is another one, the publisher moves there. */
  answered(name: string, origin: string, now: number): void {
    const s = this.live.get(name);
    if (!s || s.origin === origin) return;
    this.fleet.unpublish(s.origin, name);
    this.fleet.publish(origin, name);
    s.origin = origin;
    this.moved++;
    if (s.disturbed && !this.fleet.isSilenced(origin)) {
      s.disturbed = false;
      s.graceUntil = now + this.graceMs;
    }
  }

  /** Whether subscribers of `name` may get 503 NO_CAPACITY because its origin is (or just was) silent. */
  disturbed(name: string, now: number): boolean {
    const s = this.live.get(name);
    return s !== undefined && (s.disturbed || now < s.graceUntil);
  }

  /** An origin went silent: its publishers lost their connection. */
  originDown(origin: string): void {
    for (const s of this.live.values()) if (s.origin === origin) s.disturbed = true;
  }

  /** A silenced origin answered again: its remaining publishers are back. */
  originUp(origin: string, now: number): void {
    for (const s of this.live.values()) {
      if (s.origin === origin && s.disturbed) {
        s.disturbed = false;
        s.graceUntil = now + this.graceMs;
      }
    }
  }

  /** Once per heartbeat period: streams past their lifetime end; publishers of a silent origin ask again. */
  tick(now: number): void {
    for (const s of [...this.live.values()]) {
      if (now >= s.endsAt && !s.retrying) {
        this.end(s);
        continue;
      }
      if (s.disturbed && !s.retrying) {
        s.retrying = true;
        void this.lookup(s.name)
          .then((origin) => {
            if (origin) this.answered(s.name, origin, Date.now());
          })
          .finally(() => (s.retrying = false));
      }
    }
  }

  private end(s: Live): void {
    this.live.delete(s.name);
    const i = this.index.get(s.name)!;
    const last = this.list.pop()!;
    if (last !== s.name) {
      this.list[i] = last;
      this.index.set(last, i);
    }
    this.index.delete(s.name);
    this.fleet.unpublish(s.origin, s.name);
    this.ended++;
  }

  /** Ends every stream (at the end of a run). */
  endAll(): void {
    for (const s of [...this.live.values()]) this.end(s);
  }
}
