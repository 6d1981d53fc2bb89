// Webhook delivery, the decisions (docs/webhooks.md): which events an endpoint wants, what it is
// sent, and when a failed delivery is tried again. Pure: the event, the endpoint and the clock in;
// the mechanism (src/webhooks/) does the HTTP and keeps the cursor.
//
// Each endpoint has a cursor: the id of the last event it has been sent (or that it does not
// want). Events go out one at a time, in id order, and the cursor moves only on a 2xx: at least
// once, never out of order. A failure waits and tries the same event again, the wait doubling from
// one second to ten minutes: a receiver down for hours gets its backlog when it is back, as long
// as the event log still holds it; what the log dropped meanwhile is counted as lost.
import type { EventRecord } from '../domain/events.js';

export interface WebhookFilter {
  /** Event types, exact (`stream.live`) or by family (`stream.*`); none: every type. */
  events?: readonly string[];
  /** Node groups; none: every group. */
  groups?: readonly string[];
  /** Streams (for stream events); none: every stream. Other events pass a stream filter only when `groups` or `events` ask for them. */
  streams?: readonly string[];
}

export function wants(filter: WebhookFilter, e: EventRecord): boolean {
  if (filter.events && filter.events.length > 0 && !filter.events.some((t) => t === e.type || (t.endsWith('.*') && e.type.startsWith(t.slice(0, -1))))) return false;
  if (filter.groups && filter.groups.length > 0 && !filter.groups.includes(e.group)) return false;
  if (filter.streams && filter.streams.length > 0) {
    const stream = (e as { stream?: string }).stream;
    if (stream === undefined || !filter.streams.includes(stream)) return false;
  }
  return true;
}

/** What a receiver gets: the Standard Webhooks shape (`type`, `timestamp`, `data`); `data` is the event as GET /events sends it. */
export function payloadOf(e: EventRecord): string {
  return JSON.stringify({ type: e.type, timestamp: new Date(e.at).toISOString(), data: e });
}

export const FIRST_RETRY_MS = 1000;
export const LAST_RETRY_MS = 10 * 60_000;

/** The wait before attempt `failures + 1` of the same event, after `failures` failures (≥ 1): doubling, capped, with up to a tenth of jitter. */
export function retryDelay(failures: number, random: () => number): number {
  const base = Math.min(LAST_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.max(0, Math.min(failures - 1, 20)));
  return Math.round(base * (1 + random() * 0.1));
}

/** What an endpoint's delivery looks like from outside (the API, metrics, the dashboard). */
export interface DeliveryState {
  /** The last event id sent or skipped. */
  cursor: number;
  /** Events after the cursor, wanted or not: what the endpoint is still to be passed. */
  backlog: number;
  delivered: number;
  failures: number;
  /** Failures since the last success. */
  consecutiveFailures: number;
  /** Events the log dropped before they could be delivered. */
  lost: number;
  lastSuccessAt: number | null;
  lastAttemptAt: number | null;
  lastError: string | null;
  nextAttemptAt: number | null;
}

export const freshDelivery = (cursor: number): DeliveryState => ({
  cursor,
  backlog: 0,
  delivered: 0,
  failures: 0,
  consecutiveFailures: 0,
  lost: 0,
  lastSuccessAt: null,
  lastAttemptAt: null,
  lastError: null,
  nextAttemptAt: null,
});

/** The state with its backlog: events after the cursor, wanted or not, when the log's last id is `last` (O(1), for every scrape). */
export function withBacklog(s: DeliveryState, last: number): DeliveryState {
  return { ...s, backlog: Math.max(0, last - s.cursor) };
}

/** After a 2xx for event `seq`. */
export function delivered(s: DeliveryState, seq: number, now: number): DeliveryState {
  return { ...s, cursor: seq, delivered: s.delivered + 1, consecutiveFailures: 0, lastSuccessAt: now, lastAttemptAt: now, lastError: null, nextAttemptAt: null };
}

/** After a failed attempt: the same event again after the backoff. */
export function failed(s: DeliveryState, error: string, now: number, random: () => number): DeliveryState {
  const consecutiveFailures = s.consecutiveFailures + 1;
  return { ...s, failures: s.failures + 1, consecutiveFailures, lastAttemptAt: now, lastError: error.slice(0, 300), nextAttemptAt: now + retryDelay(consecutiveFailures, random) };
}

/**
 * The cursor moved past events the endpoint does not want, or past what the log no longer holds:
 * `oldest` is the first id the log still has; anything wanted between the cursor and it is lost.
 */
export function skipped(s: DeliveryState, to: number, lostEvents = 0): DeliveryState {
  return to <= s.cursor && lostEvents === 0 ? s : { ...s, cursor: Math.max(s.cursor, to), lost: s.lost + lostEvents };
}
