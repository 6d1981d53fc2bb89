// A client resuming the event stream (GET /as/v1/events with ?since= or Last-Event-ID, docs/api.md)
// gets everything the log still holds after its id, then the live events, with no gap and no
// duplicate between the two: the log is read page by page (each page waits until the client has
// read the one before, so a replay of the whole log never buffers megabytes for one client), while
// live events are held from the moment the stream opened; once the pages reach the end, what was
// held and not already in a page goes out, and from then on live events go out as they come.
import type { EventRecord } from '../domain/events.js';
import type { Events } from './log.js';

/** Events read from the log at a time. */
export const REPLAY_PAGE = 500;
/** Live events held while a replay runs: past this the client is let go (it resumes with Last-Event-ID). */
export const MAX_HELD = 10_000;

export interface EventSink {
  send(e: EventRecord): void;
  /** Resolves once the client has read what it was sent (true), or is gone (false). */
  room(): Promise<boolean>;
  /** Too many live events held for a client that reads too slowly. */
  overflow(): void;
}

/**
 * Follows `events` for one client: from `since` (replayed from the log first) or, when undefined,
 * from now. Returns the unsubscribe.
 */
export function follow(events: Events, since: number | undefined, sink: EventSink): () => void {
  if (since === undefined) return events.subscribe((e) => sink.send(e));
  const held: EventRecord[] = [];
  let replaying = true;
  // Subscribed before the first page is read: an event logged after this is held, one logged
  // before is in the log. Nothing falls between the two.
  const unsubscribe = events.subscribe((e) => {
    if (!replaying) return sink.send(e);
    held.push(e);
    if (held.length > MAX_HELD) sink.overflow();
  });
  void (async () => {
    let cursor = since;
    for (;;) {
      const page = events.since(cursor, REPLAY_PAGE);
      for (const e of page) sink.send(e);
      if (page.length > 0) cursor = page.at(-1)!.seq!;
      if (page.length < REPLAY_PAGE) break;
      if (!(await sink.room())) return;
    }
    replaying = false;
    // Held events the pages already carried are not sent twice; unnumbered ones (the log could not
    // take them) were never in a page.
    for (const e of held.splice(0)) if (e.seq === undefined || e.seq > cursor) sink.send(e);
  })();
  return unsubscribe;
}
