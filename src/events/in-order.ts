// Events leave in the order they were appended, each batch once its log write has settled (logged
// or refused), whatever order the writes settle in: the one queue both event logs (LMDB,
// src/events/log.ts; JetStream, src/cluster/events.ts) put their batches through.
import type { EventRecord } from '../domain/events.js';

/** A batch whose write is under way; `settle` it when the write is done. */
export interface Batch {
  readonly records: EventRecord[];
  logged: boolean | null;
}

export class InOrder {
  private readonly queue: Batch[] = [];
  private count = 0;

  /** `release` gets each batch, in append order, once it and every batch before it settled. */
  constructor(private readonly release: (records: EventRecord[], logged: boolean) => void) {}

  /** Events appended and not yet released. */
  get waiting(): number {
    return this.count;
  }

  add(records: EventRecord[]): Batch {
    const batch: Batch = { records, logged: null };
    this.queue.push(batch);
    this.count += records.length;
    return batch;
  }

  settle(batch: Batch, logged: boolean): void {
    batch.logged = logged;
    for (let head = this.queue[0]; head && head.logged !== null; head = this.queue[0]) {
      this.queue.shift();
      this.count -= head.records.length;
      this.release(head.records, head.logged);
    }
  }
}
