// Follows the service's event stream (SSE) and lets a bench wait for an event instead of sleeping
// (any event, or every one of some nodes reaching a state). Memory stays bounded however long it
// runs: counts by type and the last few hundred events.
import type { EventRecord } from '../../src/domain/events.js';
import { openEvents } from '../../src/events/stream-client.js';

export interface Waiter {
  test(e: EventRecord): boolean;
  resolve(e: EventRecord): void;
}

export interface Follower {
  /** Events seen, by type. */
  counts: Map<string, number>;
  /** The most recent events (at most `keep`), oldest first. */
  recent: EventRecord[];
  /**
   * Resolves with the first event from now on that passes `test`; rejects after `timeoutMs`.
   * Register it before the action that causes the event.
   */
  next(test: (e: EventRecord) => boolean, timeoutMs: number, what: string): Promise<EventRecord>;
  /** Set when the stream ended or failed before stop(). */
  failure: string | null;
  stop(): void;
}

export async function follow(url: string, token: string, types: string, options: { since?: number; keep?: number } = {}): Promise<Follower> {
  const keep = options.keep ?? 500;
  const controller = new AbortController();
  const waiters = new Set<Waiter>();
  const follower: Follower = {
    counts: new Map(),
    recent: [],
    failure: null,
    next(test, timeoutMs, what) {
      return new Promise<EventRecord>((resolve, reject) => {
        const waiter: Waiter = {
          test,
          resolve: (e) => {
            clearTimeout(timer);
            waiters.delete(waiter);
            resolve(e);
          },
        };
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
        }, timeoutMs);
        waiters.add(waiter);
      });
    },
    stop: () => controller.abort(),
  };
  const events = await openEvents(url, token, { types, ...(options.since !== undefined ? { since: options.since } : {}), signal: controller.signal });
  void (async () => {
    for await (const e of events) {
      follower.counts.set(e.type, (follower.counts.get(e.type) ?? 0) + 1);
      follower.recent.push(e);
      if (follower.recent.length > keep) follower.recent.splice(0, follower.recent.length - keep);
      for (const w of [...waiters]) if (w.test(e)) w.resolve(e);
    }
    if (!controller.signal.aborted) follower.failure = 'the event stream ended';
  })().catch((err: Error) => {
    if (!controller.signal.aborted) follower.failure = `the event stream failed: ${err.message}`;
  });
  return follower;
}

/** `e` is a node of `group` reaching state `to` (null: removed). */
export function isNodeState(e: EventRecord, group: string, to: string | null): boolean {
  return e.type === 'node.state' && e.group === group && e.to === to;
}

/** Every one of `ids` reaches state `to` (counting events already seen when `replay`). */
export function allReach(events: Follower, group: string, ids: readonly string[], to: string | null, timeoutMs: number, replay = false): Promise<EventRecord> {
  const left = new Set(ids);
  const test = (e: EventRecord) => isNodeState(e, group, to) && left.delete((e as { nodeId: string }).nodeId) && left.size === 0;
  if (replay) for (const e of events.recent) if (test(e)) return Promise.resolve(e);
  return events.next(test, timeoutMs, `${ids.length} node(s) of ${group} to reach ${to ?? 'removal'} (left: ${[...left].join(', ')})`);
}
