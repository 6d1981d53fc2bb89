// The event log: actors post event bodies here; each gets a number and a time, goes into a
// bounded log in LMDB (CONTRACT §9) and out to whoever listens (SSE clients, the supervisor's
// capacity requests, metrics).
import type { EventBody, EventRecord } from '../domain/events.js';
import type { Store } from '../store/store.js';
import { stored } from '../store/failures.js';

export type EventListener = (event: EventRecord) => void;

export class EventLog {
  private seq = 0;
  private readonly listeners = new Set<EventListener>();
  private sinceTrim = 0;
  /**
   * The events of this process, newest last, up to `keep`. Replays read them from here: LMDB
   * writes are batched, so an event appended a moment ago may not be readable there yet, and a
   * subscriber that replayed from LMDB alone could miss it for good.
   */
  private readonly recent: EventRecord[] = [];

  constructor(
    private readonly store: Store,
    private readonly keep = 10_000,
    private readonly now: () => number = Date.now,
  ) {
    for (const key of store.events.getKeys({ reverse: true, limit: 1 })) this.seq = key as number;
  }

  private writable(): boolean {
    try {
      this.store.guard.check();
      return true;
    } catch {
      return false;
    }
  }

  get last(): number {
    return this.seq;
  }

  append(bodies: readonly EventBody[]): EventRecord[] {
    const at = this.now();
    const records = bodies.map((body) => ({ ...body, seq: ++this.seq, at }) as EventRecord);
    // The log is best effort on disk: a failed append (disk full) leaves the event in memory.
    if (this.writable()) for (const r of records) void stored(this.store.events.put(r.seq, r)).catch(() => {});
    this.recent.push(...records);
    if (this.recent.length > this.keep) this.recent.splice(0, this.recent.length - this.keep);
    this.sinceTrim += records.length;
    if (this.sinceTrim >= 500) this.trim();
    for (const r of records) for (const l of this.listeners) l(r);
    return records;
  }

  /** Events after `seq`, oldest first (for SSE clients that reconnect with Last-Event-ID). */
  since(seq: number, limit = 1000): EventRecord[] {
    const firstRecent = this.recent[0]?.seq ?? this.seq + 1;
    const out: EventRecord[] = [];
    // Older than this process's own events: those were committed by an earlier run.
    if (seq + 1 < firstRecent) {
      for (const { value } of this.store.events.getRange({ start: seq + 1, end: firstRecent, limit })) out.push(value);
    }
    for (const r of this.recent) {
      if (out.length >= limit) break;
      if (r.seq > seq) out.push(r);
    }
    return out;
  }

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private trim(): void {
    this.sinceTrim = 0;
    const below = this.seq - this.keep;
    if (below <= 0) return;
    if (!this.writable()) return;
    void stored(
      this.store.events.transaction(() => {
        for (const key of this.store.events.getKeys({ end: below + 1 })) this.store.events.remove(key);
      }),
    ).catch(() => {});
  }
}
