// The cluster's event log (docs/cluster.md): every instance publishes the events of its actors and
// its front end to one JetStream stream (SY_EVENTS, R3, the last 10,000 kept), and every instance
// follows the whole stream. An event's id is its stream sequence: ids only grow and never repeat,
// whichever instance logged it, so a client can resume with Last-Event-ID on any instance.
//
// As in the embedded log (src/events/log.ts): an event goes out once it is logged (acknowledged
// by a majority of NATS servers), in the order appended here. One the stream does not take is sent
// again, under the same message id, for up to a minute (event-publisher.ts: a leader election of
// the stream); one it still does not take (NATS away) goes out unnumbered to this instance's own
// listeners and event streams, and cannot be replayed. Events still waiting are counted in
// switchyard_events_waiting_for_store.
//
// The follower is watched: after a NATS server is killed, the client's consumer could stop for good
// without a word (messages pending, no pull outstanding: `follow` says why it fetches). Every second
// its last sequence is compared with the stream's (src/policy/cluster/follower.ts); behind and not
// moving for 3 s, or ended, it is made again from where it stopped: logged, and counted in
// switchyard_cluster_event_follower_restarts_total.
import { DeliverPolicy, type JsMsg } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import type { EventBody, EventRecord } from '../domain/events.js';
import type { EventListener, Events } from '../events/log.js';
import { randomUUID } from 'node:crypto';
import { EVENTS_KEEP, STREAMS, type Jet } from './nats.js';
import { EventPublisher } from './event-publisher.js';
import { InOrder } from '../events/in-order.js';
import { Watchdog } from './watchdog.js';

export class ClusterEventLog implements Events {
  /** The last EVENTS_KEEP events of the stream, oldest first. */
  private readonly kept: EventRecord[] = [];
  private lastSeq = 0;
  private readonly listeners = new Set<EventListener>();
  private readonly local = new Set<EventListener>();
  private readonly out = new InOrder((records) => this.release(records));
  private readonly publisher: EventPublisher;
  private stopped = false;
  private caughtUp: Promise<void> = Promise.resolve();
  /** At the start: the stream's last sequence then, and what to call once it is read. */
  private reachedAt: { target: number; reached: () => void } | null = null;
  /** The follower now: each one made gets a new number, and an older one's messages are ignored. */
  private generation = 0;
  /** The follower ended (or could not be made): the next check makes it again. */
  private ended = false;
  /** Makes the follower again when it stands still or ends (watchdog.ts). */
  private readonly watchdog: Watchdog;
  /** Restarts of the follower, and how far behind the stream it was at the last check. */
  readonly follower = { restarts: 0, lag: 0 };

  constructor(
    private readonly j: Jet,
    private readonly instance: string,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.publisher = new EventPublisher(j, now);
    this.watchdog = new Watchdog(
      {
        position: () => this.lastSeq,
        streamLast: async () => {
          const last = (await this.j.jsm.streams.info(STREAMS.events)).state.last_seq;
          this.follower.lag = Math.max(0, last - this.lastSeq);
          return last;
        },
        ended: () => this.ended,
        remake: async ({ restart, at, streamLast, ended }) => {
          this.follower.restarts++;
          this.log.warn({ at, streamLast, ended }, restart ? 'the event stream follower stood still behind the stream: following it again' : 'following the event stream again');
          await this.follow();
        },
      },
      log,
      'the event stream',
      now,
    );
  }

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
    this.reachedAt = { target, reached };
    await this.follow();
    this.watchdog.start();
    await Promise.race([this.caughtUp, new Promise((r) => setTimeout(r, 10_000))]);
  }

  /**
   * (Re)makes the follower: an ordered consumer from the event after the last one read (from the
   * oldest kept at the start), read by a loop of bounded fetches. Not `consume()`: on nats-server
   * 2.9 with nats.js 3.4, a consume() across the stream leader's kill -9 delivered one message after
   * each reset of its consumer and then nothing (tried on this machine: stuck after 4 of 6 kills);
   * fetches, each one its own pull, kept up through the same kills.
   */
  private async follow(): Promise<void> {
    const generation = ++this.generation;
    this.ended = true;
    const after = this.lastSeq;
    const consumer = await this.j.js.consumers.get(STREAMS.events, after === 0 ? { deliver_policy: DeliverPolicy.All } : { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: after + 1 });
    if (generation !== this.generation || this.stopped) return;
    this.ended = false;
    const current = () => generation === this.generation && !this.stopped;
    void (async () => {
      while (current()) {
        try {
          const batch = await consumer.fetch({ max_messages: 256, expires: 2000 });
          for await (const m of batch) {
            if (!current()) break;
            this.take(m);
          }
        } catch (err) {
          // The watchdog makes a follower whose fetches keep failing again; meanwhile, no spin.
          this.log.debug({ err, at: this.lastSeq }, 'a fetch of the event stream failed');
          await new Promise((r) => setTimeout(r, 250));
        }
      }
    })().catch((err: Error) => {
      if (current()) this.ended = true;
      this.log.warn({ err, at: this.lastSeq }, 'following the event stream failed: following it again');
    });
  }

  private take(m: JsMsg): void {
    // A follower made again can start on what its predecessor read.
    if (m.seq <= this.lastSeq) return;
    if (this.lastSeq > 0 && m.seq > this.lastSeq + 1) this.log.warn({ from: this.lastSeq + 1, to: m.seq - 1 }, 'events left the stream before this instance read them');
    this.lastSeq = m.seq;
    let record: EventRecord;
    try {
      record = { ...m.json<EventRecord>(), seq: m.seq };
    } catch {
      return;
    }
    this.kept.push(record);
    if (this.kept.length > EVENTS_KEEP + 500) this.kept.splice(0, this.kept.length - EVENTS_KEEP);
    for (const l of this.listeners) l(record);
    if (this.reachedAt && m.seq >= this.reachedAt.target) {
      this.reachedAt.reached();
      this.reachedAt = null;
    }
  }

  /**
   * `key`: the replicated commit that carried these events (EventBatch). Each is published under a
   * message id made of it, so that the stream takes it once however many owners hand it out
   * (republish.ts); one it already held is not released here again.
   */
  append(bodies: readonly EventBody[], key?: string): void {
    if (bodies.length === 0) return;
    const at = this.now();
    const records = bodies.map((body) => ({ ...body, at }) as EventRecord);
    const entry = this.out.add(records);
    // In order, each under a message id (its commit's, or one of this instance's own), sent again
    // until the stream takes it (event-publisher.ts).
    let left = records.length;
    records.forEach((r, i) => {
      const msgID = key !== undefined ? `${key}.${i}` : `${this.instance}.${this.boot}.${++this.counter}`;
      this.publisher.publish(`sy.ev.${this.instance}`, r, msgID, (result) => {
        if (result) {
          r.seq = result.seq;
          if (result.duplicate) this.duplicates.add(r);
        }
        if (--left > 0) return;
        const allLogged = records.every((x) => x.seq !== undefined);
        this.out.settle(entry, allLogged);
      });
    });
  }

  /** This process's part of the message ids of events that are no commit's: unique to it, never reused by a restart. */
  private readonly boot = randomUUID().slice(0, 8);
  private counter = 0;

  /** Records the stream already held (logged by an earlier owner of their group): not released again. */
  private readonly duplicates = new WeakSet<EventRecord>();

  /** Each record on its own: one given up (no sequence) goes out unnumbered; one logged reaches event streams through the stream. */
  private release(records: EventRecord[]): void {
    for (const r of records) {
      const logged = r.seq !== undefined;
      if (logged && this.duplicates.has(r)) continue;
      for (const l of this.local) l(r);
      // Logged events reach event streams through the stream, like every other instance's.
      if (!logged) for (const l of this.listeners) l(r);
    }
  }

  since(seq: number, limit = 1000): EventRecord[] {
    // `kept` is in sequence order: the first record after `seq` by bisection (a replay reads it page by page).
    let lo = 0;
    let hi = this.kept.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.kept[mid]!.seq! > seq) hi = mid;
      else lo = mid + 1;
    }
    return this.kept.slice(lo, lo + limit);
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
    this.watchdog.stop();
    this.publisher.stop();
  }
}
