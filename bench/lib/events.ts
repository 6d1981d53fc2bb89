// Follows the service's event stream (SSE) and lets a bench wait for an event instead of sleeping.
// Memory stays bounded however long it runs: counts by type and the last few hundred events.
import type { EventRecord } from '../../src/domain/events.js';

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
  const query = `types=${encodeURIComponent(types)}${options.since !== undefined ? `&since=${options.since}` : ''}`;
  const res = await fetch(`${url}/as/v1/events?${query}`, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
  if (!res.ok || !res.body) throw new Error(`GET /as/v1/events: ${res.status} ${await res.text()}`);
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const data = buffer
          .slice(0, end)
          .split('\n')
          .find((l) => l.startsWith('data: '));
        buffer = buffer.slice(end + 2);
        if (!data) continue;
        const e = JSON.parse(data.slice(6)) as EventRecord;
        follower.counts.set(e.type, (follower.counts.get(e.type) ?? 0) + 1);
        follower.recent.push(e);
        if (follower.recent.length > keep) follower.recent.splice(0, follower.recent.length - keep);
        for (const w of [...waiters]) if (w.test(e)) w.resolve(e);
      }
    }
    if (!controller.signal.aborted) follower.failure = 'the event stream ended';
  })().catch((err: Error) => {
    if (!controller.signal.aborted) follower.failure = `the event stream failed: ${err.message}`;
  });
  return follower;
}
