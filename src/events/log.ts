// The event log: actors post event bodies here; each gets a number and a time, goes into a
// bounded log in LMDB (docs/persistence.md) and out to whoever listens (SSE clients, the supervisor's
// capacity requests, metrics).
//
// An event goes out only once its log write is durable (committed; flushed too under durability
// "flush"), in the order appended. So every id a client has seen is in the log, numbering after a
// crash resumes above every id ever sent, and a client resuming with Last-Event-ID gets exactly
// what it has not seen: ids never repeat and nothing is skipped. An event the log cannot take (the
// disk guard refuses, a commit fails) still goes out, in its place, but without a number (`seq`
// absent): it cannot be replayed, and a client's Last-Event-ID stays at the last logged event.
// Numbers only grow, with gaps where an event could not be logged or a crash cut one off.
import type { EventBody, EventRecord } from '../domain/events.js';
import type { Store } from '../store/store.js';
import { InOrder } from './in-order.js';

export type EventListener = (event: EventRecord) => void;

/**
 * The event log as the front end uses it: this file's LMDB log in the embedded default, the
 * cluster's JetStream stream in cluster mode (src/cluster/events.ts).
 */
export interface Events {
  /** The number of the last event sent (and logged). */
  readonly last: number;
  /** Events appended here and not yet sent. */
  readonly waiting: number;
  /** `key`: the replicated commit that carried them (EventBatch): the cluster's log takes each once; the embedded one has no other copy to meet. */
  append(bodies: readonly EventBody[], key?: string): void;
  /** Logged events after `seq`, oldest first (for SSE clients that reconnect with Last-Event-ID). */
  since(seq: number, limit?: number): EventRecord[];
  /** The first id the log still holds (0 when it holds none): older ones were dropped (it keeps the last 10,000). */
  oldest(): number;
  /** Every event of the log as it is sent: in cluster mode, every instance's. */
  subscribe(listener: EventListener): () => void;
  /** The events appended here, once sent: what this instance acts on (metrics, its supervisor's requests). */
  subscribeLocal(listener: EventListener): () => void;
}

export class EventLog implements Events {
  /** The last number handed out. */
  private seq = 0;
  /** The last number sent: every logged event up to it is durable, and readable in LMDB. */
  private sent = 0;
  private readonly listeners = new Set<EventListener>();
  private sinceTrim = 0;
  private readonly out = new InOrder((records, ok) => this.release(records, ok));

  constructor(
    private readonly store: Store,
    private readonly keep = 10_000,
    private readonly now: () => number = Date.now,
  ) {
    for (const key of store.events.getKeys({ reverse: true, limit: 1 })) this.seq = key as number;
    this.sent = this.seq;
  }

  /** The number of the last event sent (and logged). */
  get last(): number {
    return this.sent;
  }

  /** Events appended and not yet sent: each waits for its log write to be durable. */
  get waiting(): number {
    return this.out.waiting;
  }

  append(bodies: readonly EventBody[]): void {
    if (bodies.length === 0) return;
    const at = this.now();
    const records = bodies.map((body) => ({ ...body, at }) as EventRecord);
    const entry = this.out.add(records);
    let durable: Promise<boolean>;
    try {
      const first = this.seq + 1;
      durable = this.store.write(() => {
        records.forEach((r, i) => void this.store.events.put(first + i, { ...r, seq: first + i }));
      }).durable;
      for (const [i, r] of records.entries()) r.seq = first + i;
      this.seq += records.length;
    } catch {
      // The guard refuses writes (or the store is closed): these go out unnumbered, in turn.
      durable = Promise.resolve(false);
    }
    durable.then(
      (ok) => this.out.settle(entry, ok),
      () => this.out.settle(entry, false),
    );
  }

  private release(records: EventRecord[], ok: boolean): void {
    if (ok) this.sent = records.at(-1)!.seq;
    // Not in the log: no number that a crash could give to another event.
    else for (const r of records) delete (r as Partial<EventRecord>).seq;
    this.sinceTrim += ok ? records.length : 0;
    for (const r of records) for (const l of this.listeners) l(r);
    if (this.sinceTrim >= 500) this.trim();
  }

  /** Logged events after `seq`, oldest first, up to the last one sent (for SSE clients that reconnect with Last-Event-ID). */
  since(seq: number, limit = 1000): EventRecord[] {
    const out: EventRecord[] = [];
    if (seq >= this.sent) return out;
    for (const { value } of this.store.events.getRange({ start: seq + 1, end: this.sent + 1, limit })) out.push(value);
    return out;
  }

  oldest(): number {
    for (const key of this.store.events.getKeys({ limit: 1 })) return key as number;
    return 0;
  }

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** One process: every event is local. */
  subscribeLocal(listener: EventListener): () => void {
    return this.subscribe(listener);
  }

  private trim(): void {
    this.sinceTrim = 0;
    const below = this.sent - this.keep;
    if (below <= 0) return;
    const keys = [...this.store.events.getKeys({ end: below + 1 })];
    try {
      // Best effort: a trim the guard refuses is done by a later one.
      void this.store.write(() => keys.forEach((key) => void this.store.events.remove(key)));
    } catch {
      /* refused */
    }
  }
}
