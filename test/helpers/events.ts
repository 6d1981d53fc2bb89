// Waits for what the service says happened, on its own event stream (GET /as/v1/events), instead
// of sleeping: replay from the start, then follow live events until the predicate holds.
import type { EventRecord } from '../../src/domain/events.js';
import { openEvents } from '../../src/events/stream-client.js';

export async function waitForEvents(url: string, token: string, done: (seen: readonly EventRecord[]) => boolean, options: { timeoutMs?: number; since?: number } = {}): Promise<EventRecord[]> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.timeoutMs ?? 20_000);
  const seen: EventRecord[] = [];
  try {
    for await (const e of await openEvents(url, token, { since: options.since ?? 0, signal: controller.signal })) {
      seen.push(e);
      if (done(seen)) return seen;
    }
    throw new Error('the event stream ended');
  } catch (err) {
    if (controller.signal.aborted)
      throw new Error(
        `timed out waiting; saw ${seen.length} events: ${seen
          .slice(-8)
          .map((e) => `${e.type}${'to' in e ? `→${String(e.to)}` : ''}`)
          .join(', ')}`,
      );
    throw err;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

/** Node ids that are INSERVICE according to the events seen (latest state wins). */
export function inService(events: readonly EventRecord[]): Set<string> {
  const state = new Map<string, string | null>();
  for (const e of events) if (e.type === 'node.state') state.set(e.nodeId, e.to);
  return new Set([...state].filter(([, s]) => s === 'INSERVICE').map(([id]) => id));
}
