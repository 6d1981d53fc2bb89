// The soak's load: autocannon sending a shuffled mix of lookups (subscribe and publish lookups of
// the live streams, publish lookups of new names, stream-list pages), each answer judged as it
// arrives and fed back to the simulated fleet (a viewer sent to an edge, a publisher given an
// origin). Latencies go to the capacity histogram until recording starts, then to one row per
// `rowMs` of the soak.
import autocannon from 'autocannon';
import { nodeIdOf } from './soak-admin.js';
import type { Fleet, LiveStreams } from './fleet.js';
import { Histogram } from './histogram.js';
import type { Statuses } from './statuses.js';

export type Kind = 'subscribe' | 'publish (live stream)' | 'publish (new stream)' | 'streams page';

/** Out of 200 requests: subscribe lookups of live streams, publish lookups of live and of new names, stream-list pages. */
export const MIX: Array<[Kind, number]> = [
  ['subscribe', 169],
  ['publish (live stream)', 10],
  ['publish (new stream)', 20],
  ['streams page', 1],
];

export interface Row {
  hist: Histogram;
  responses: number;
}

export type LoadRun = autocannon.Instance & PromiseLike<autocannon.Result>;

export interface MixOptions {
  url: string;
  authorization: string;
  connections: number;
  /** The group the live streams are in (stream-list pages start after one of them). */
  group: string;
  /** Makes this run's new stream names unique. */
  runId: string;
  fleet: Fleet;
  live: LiveStreams;
  statuses: Statuses;
  rowMs: number;
}

export class MixedLoad {
  /** The soak's rows, from `record()` on; a row no response fell in stays a hole. */
  readonly rows: Row[] = [];
  /** Latencies before `record()`: the capacity run's. */
  readonly capacityHist = new Histogram();
  private readonly slots: Kind[];
  private slot = 0;
  private fresh = 0;
  private rowsFrom = 0;
  private recording = false;

  constructor(private readonly o: MixOptions) {
    this.slots = MIX.flatMap(([kind, n]) => Array.from({ length: n }, () => kind));
    for (let i = this.slots.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [this.slots[i], this.slots[j]] = [this.slots[j]!, this.slots[i]!];
    }
  }

  /** From now on latencies go to the rows, the first of which starts at `from`. */
  record(from: number): void {
    this.recording = true;
    this.rowsFrom = from;
  }

  /** The mix for `seconds`: as fast as it is answered, or at `rate` requests a second over all connections. */
  run(seconds: number, rate?: number): LoadRun {
    const instance = autocannon({
      url: this.o.url,
      connections: this.o.connections,
      duration: seconds,
      timeout: 10,
      headers: { authorization: this.o.authorization },
      ...(rate ? { overallRate: rate } : {}),
      requests: [{ method: 'GET', path: '/', setupRequest: this.request as never, onResponse: this.response as never }],
    }) as unknown as LoadRun;
    instance.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => {
      if (!this.recording) return this.capacityHist.record(ms);
      const i = Math.floor((Date.now() - this.rowsFrom) / this.o.rowMs);
      const row = (this.rows[i] ??= { hist: new Histogram(), responses: 0 });
      row.hist.record(ms);
      row.responses++;
    });
    instance.on('reqError', (err: Error) => this.o.statuses.record('load', 'socket error', 'unexpected', err.message));
    return instance;
  }

  private readonly request = (req: autocannon.Request, context: Record<string, unknown>): autocannon.Request => {
    const { live, group } = this.o;
    let kind = this.slots[this.slot++ % this.slots.length]!;
    let stream = kind === 'subscribe' || kind === 'publish (live stream)' ? live.pick() : undefined;
    if (stream === undefined && kind !== 'streams page') {
      kind = 'publish (new stream)';
      stream = `${this.o.runId}-${(this.fresh++).toString(36)}`;
    }
    context.kind = kind;
    context.stream = stream;
    const slot = this.slot;
    let path: string;
    if (kind === 'subscribe') path = `/as/v1/streams/live/${stream}/subscribe${slot % 5 === 0 ? '?region=r2' : ''}`;
    else if (kind === 'streams page') {
      const after = slot % 2 === 0 ? live.pick() : undefined;
      path = `/as/v1/streams?limit=${[20, 50, 100][slot % 3]}${after ? `&after=${group}/${after}` : ''}`;
    } else path = `/as/v1/streams/live/${stream}/publish`;
    return { ...req, method: 'GET', path };
  };

  private readonly response = (status: number, body: string, context: Record<string, unknown>): void => {
    const { live, fleet, statuses } = this.o;
    const kind = context.kind as Kind;
    const stream = context.stream as string;
    const now = Date.now();
    if (status === 200) {
      statuses.record(kind, 200, 'ok');
      if (kind === 'subscribe') {
        const edge = nodeIdOf(body);
        if (edge) fleet.viewed(edge, stream);
      } else if (kind === 'publish (new stream)') {
        const origin = nodeIdOf(body);
        if (origin && live.wanted()) live.begin(stream, origin, now);
      } else if (kind === 'publish (live stream)') {
        const origin = nodeIdOf(body);
        if (origin) live.answered(stream, origin, now);
      }
      return;
    }
    // A viewer of a stream whose origin went silent: no origin serves it until its publisher has
    // moved (the answer says so, with Retry-After); documented, so tolerated, and counted.
    if (kind === 'subscribe' && status === 503 && body.includes('"code":"NO_CAPACITY"') && body.includes('is not in service') && live.disturbed(stream, now)) {
      statuses.record(kind, status, 'tolerated', 'the origin of the stream is FAULT (silenced by the churn); its publisher is moving', body);
      return;
    }
    statuses.record(kind, status, 'unexpected', '', body);
  };
}
