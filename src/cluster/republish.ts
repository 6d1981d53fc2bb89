// Events across a takeover (docs/cluster.md). An owner publishes a commit's events to SY_EVENTS
// once the commit is durable: killed in between, it would leave them out of the event log for
// good (and out of every webhook). So each entry of the group's log carries its commits' events
// (wal.ts), each event is published under a message id made of its commit's key (EventBatch), and
// a new owner, once fenced, reads the entries appended in the REPUBLISH_WINDOW_MS before its epoch
// record and hands their events out again, before any of its own. SY_EVENTS drops those it already
// holds (its duplicate window, EVENTS_DUPLICATE_WINDOW_MS, is twice as long) and logs the others,
// in commit order. Times are the NATS servers' own (the epoch record's), not this instance's clock.
import { DeliverPolicy } from '@nats-io/jetstream';
import { unpack } from 'msgpackr';
import { commitKey, type EventBatch } from '../domain/events.js';
import { CONSUMER_IDLE_MS, STREAMS, walSubject, type Jet } from './nats.js';
import type { Entry } from './replica.js';

/** How far before its epoch record a new owner looks for events that may not have been published. */
export const REPUBLISH_WINDOW_MS = 60_000;
/**
 * Commits' events kept at most: of a very busy group's minute, the newest (those most likely not
 * yet published: an owner publishes within milliseconds, unless the stream was electing a leader).
 */
const MAX_BATCHES = 50_000;

/**
 * The events of the group's commits in the window before the epoch record at `epochSeq`, oldest
 * first, each batch keyed by its commit.
 */
export async function eventsBefore(j: Jet, group: string, epochSeq: number): Promise<EventBatch[]> {
  const epoch = await j.jsm.streams.getMessage(STREAMS.wal, { seq: epochSeq });
  if (!epoch) return [];
  const consumer = await j.js.consumers.get(STREAMS.wal, {
    filter_subjects: walSubject(group),
    deliver_policy: DeliverPolicy.StartTime,
    opt_start_time: new Date(epoch.time.getTime() - REPUBLISH_WINDOW_MS).toISOString(),
    inactive_threshold: CONSUMER_IDLE_MS,
  });
  let batches: EventBatch[] = [];
  // The epoch record is in the window, so every fetch has at least it to reach: none waits for nothing.
  for (;;) {
    let reached = false;
    let fetched = 0;
    const messages = await consumer.fetch({ max_messages: 1000, expires: 2000 });
    for await (const m of messages) {
      fetched++;
      if (m.seq >= epochSeq) {
        reached = true;
        break;
      }
      const entry = unpack(m.data) as Entry;
      if (entry.t !== 'w' || !entry.v) continue;
      entry.v.forEach((events, index) => {
        if (events.length > 0) batches.push({ events: [...events], key: commitKey(group, m.seq, index) });
      });
      if (m.info.pending === 0) reached = true;
    }
    if (batches.length > 2 * MAX_BATCHES) batches = batches.slice(-MAX_BATCHES);
    if (reached || fetched === 0) break;
  }
  return batches.slice(-MAX_BATCHES);
}
