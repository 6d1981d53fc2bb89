// The cluster's event log (docs/cluster.md): every instance publishes the events of its actors and
// its front end to one JetStream stream (SY_EVENTS, R3, the last 10,000 kept), and every instance
// follows the whole stream. An event's id is its stream sequence: ids only grow and never repeat,
// whichever instance logged it, so a client can resume with Last-Event-ID on any instance.
//
// As in the embedded log (src/events/log.ts): an event goes out once it is logged (acknowledged
// by a majority of NATS servers), in the order appended here; one the stream does not take (NATS
// away) goes out unnumbered to this instance's own listeners and event streams, and cannot be
// replayed.
import { DeliverPolicy } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import type { EventBody, EventRecord } from '../domain/events.js';
import type { EventListener, Events } from '../events/log.js';
import { EVENTS_KEEP, JS_TIMEOUT_MS, STREAMS, type Jet } from './nats.js';
import { InOrder } from '../events/in-order.js';

export class ClusterEventLog implements Events {
  /** The last EVENTS_KEEP events of the stream, oldest first. */
  private readonly kept: EventRecord[] = [];
  private lastSeq = 0;
  private readonly listeners = new Set<EventListener>();
  private readonly local = new Set<EventListener>();
  private readonly out = new InOrder((records, ok) => this.release(records, ok));
  private stopped = false;
  private caughtUp: Promise<void> = Promise.resolve();

  constructor(
    private readonly j: Jet,
    private readonly instance: string,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  get last(): number {
    return this.lastSeq;
  }

  get waiting(): number {
    return this.out.waiting;
  }

  /** Follows the stream from its oldest kept event; resolves once what it held at the start is read. */
  async start(): Promise<void> {
    let target = 0;
    try {
      target = (await this.j.jsm.streams.info(STREAMS.events)).state.last_seq;
    } catch {
      /* read as it comes */
    }
    let reached!: () => void;
    this.caughtUp = new Promise<void>((r) => (reached = r));
    if (target === 0) reached();
    const consumer = await this.j.js.consumers.get(STREAMS.events, { deliver_policy: DeliverPolicy.All });
    const messages = await consumer.consume();
    void (async () => {
      for await (const m of messages) {
        if (this.stopped) break;
        let record: EventRecord;
        try {
          record = { ...m.json<EventRecord>(), seq: m.seq };
        } catch {
          continue;
        }
        this.lastSeq = m.seq;
        this.kept.push(record);
        if (this.kept.length > EVENTS_KEEP + 500) this.kept.splice(0, this.kept.length - EVENTS_KEEP);
        for (const l of this.listeners) l(record);
        if (m.seq >= target) reached();
      }
    })().catch((err: Error) => this.log.warn({ err }, 'following the event stream ended'));
    await Promise.race([this.caughtUp, new Promise((r) => setTimeout(r, 10_000))]);
  }

  append(bodies: readonly EventBody[]): void {
    if (bodies.length === 0) return;
    const at = this.now();
    const records = bodies.map((body) => ({ ...body, at }) as EventRecord);
    const entry = this.out.add(records);
    // Published in order on one connection: the stream numbers them in that order.
    const acks = records.map((r) => this.j.js.publish(`sy.ev.${this.instance}`, JSON.stringify(r), { timeout: JS_TIMEOUT_MS * 4 }));
    Promise.all(acks).then(
      (as) => {
        as.forEach((a, i) => {
          records[i]!.seq = a.seq;
        });
        this.out.settle(entry, true);
      },
      () => this.out.settle(entry, false),
    );
  }

  private release(records: EventRecord[], ok: boolean): void {
    for (const r of records) {
      if (!ok) delete (r as Partial<EventRecord>).seq;
      for (const l of this.local) l(r);
      // Logged events reach event streams through the stream, like every other instance's.
      if (!ok) for (const l of this.listeners) l(r);
    }
  }

  since(seq: number, limit = 1000): EventRecord[] {
    const out: EventRecord[] = [];
    for (const r of this.kept) {
      if (r.seq! > seq) out.push(r);
      if (out.length >= limit) break;
    }
    return out;
  }

  oldest(): number {
    return this.kept[0]?.seq ?? 0;
  }

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  subscribeLocal(listener: EventListener): () => void {
    this.local.add(listener);
    return () => this.local.delete(listener);
  }

  stop(): void {
    this.stopped = true;
  }
}
