// How the cluster's event log puts events into SY_EVENTS (docs/cluster.md, "The event log"):
// in order, each under a message id, and again until the stream takes it. While the stream elects
// a leader (4–9 s after its leader dies) a publication fails, though the groups' logs, other
// streams, may go on taking commits: an event published once and dropped on failure was lost for
// good (9 of 1,924 in a test that killed the stream's leader three times). So a failed event is
// kept, with every one behind it, and sent again: the head alone until the stream answers, then
// the rest, in order. The stream drops a message id it already holds (an event whose
// acknowledgement was lost), so sending again never logs twice. One that still fails after
// GIVE_UP_MS is given up (it goes out unnumbered, as before): well inside the stream's duplicate
// window, so that a late success is still recognised.
import type { EventRecord } from '../domain/events.js';
import { EVENTS_DUPLICATE_WINDOW_MS, JS_TIMEOUT_MS, type Jet } from './nats.js';

/** How long an event is sent again before it is given up. */
export const GIVE_UP_MS = EVENTS_DUPLICATE_WINDOW_MS / 2;
/** The pause after a failed attempt. */
const RETRY_MS = 250;

/** What became of one event: its sequence in the stream (and whether the stream held it already), or null if given up. */
export type Published = { seq: number; duplicate: boolean } | null;

interface Outgoing {
  subject: string;
  data: string;
  msgID: string;
  first: number;
  settled: boolean;
  done(result: Published): void;
}

function settle(o: Outgoing, result: Published): void {
  if (o.settled) return;
  o.settled = true;
  o.done(result);
}

export class EventPublisher {
  private queue: Outgoing[] = [];
  private pumping = false;
  /** The last attempt failed: the next sends the head alone, until the stream answers. */
  private failing = false;
  private stopped = false;

  constructor(
    private readonly j: Jet,
    private readonly now: () => number = Date.now,
    private readonly pause: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
  ) {}

  /** Queues one event; `done` is called once, in the order events were queued unless the stream lost its leader in between. */
  publish(subject: string, record: EventRecord, msgID: string, done: (result: Published) => void): void {
    this.queue.push({ subject, data: JSON.stringify(record), msgID, first: this.now(), settled: false, done });
    void this.pump();
  }

  /** Gives up on every event still waiting. */
  stop(): void {
    this.stopped = true;
    const left = this.queue;
    this.queue = [];
    for (const o of left) settle(o, null);
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.queue.length > 0 && !this.stopped) {
        const batch = this.failing ? this.queue.slice(0, 1) : this.queue.slice();
        const results = await Promise.allSettled(batch.map((o) => this.j.js.publish(o.subject, o.data, { msgID: o.msgID, timeout: JS_TIMEOUT_MS * 4 })));
        let failed = 0;
        results.forEach((r, i) => {
          if (r.status === 'fulfilled') settle(batch[i]!, { seq: r.value.seq, duplicate: r.value.duplicate });
          else failed++;
        });
        this.failing = failed > 0;
        // What failed stays, in order, ahead of what was queued meanwhile; while the stream does
        // not answer, what has waited too long is given up (the oldest first: the queue's head).
        const now = this.now();
        const kept: Outgoing[] = [];
        for (const o of this.queue) {
          if (o.settled) continue;
          if (this.failing && now - o.first >= GIVE_UP_MS) settle(o, null);
          else kept.push(o);
        }
        this.queue = kept;
        if (this.failing) await this.pause(RETRY_MS);
      }
    } finally {
      this.pumping = false;
    }
  }
}
