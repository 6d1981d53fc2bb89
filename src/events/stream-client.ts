// The client side of the event stream (GET /as/v1/events, server-sent events), for the demo, the
// benches and the tests, which all follow what the service says happened.
import type { EventRecord } from '../domain/events.js';

/** One event as sent: its `id:` line (absent for an event the log could not take) and its record. */
export interface EventFrame {
  id: number | undefined;
  event: EventRecord;
}

/**
 * Connects (a refusal rejects here), then yields the events as they come, with their ids.
 * `lastEventId` resumes as a browser's EventSource does after a reconnect.
 */
export async function openEventFrames(url: string, token: string, options: { since?: number; lastEventId?: number; types?: string; signal?: AbortSignal } = {}): Promise<AsyncGenerator<EventFrame>> {
  const query = new URLSearchParams();
  if (options.types !== undefined) query.set('types', options.types);
  if (options.since !== undefined) query.set('since', String(options.since));
  const res = await fetch(`${url}/as/v1/events${query.size > 0 ? `?${query}` : ''}`, {
    headers: { authorization: `Bearer ${token}`, ...(options.lastEventId !== undefined ? { 'last-event-id': String(options.lastEventId) } : {}) },
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (!res.ok || !res.body) throw new Error(`GET /as/v1/events answered ${res.status}: ${await res.text()}`);
  return frames(res.body as unknown as AsyncIterable<Uint8Array>);
}

/** Connects (a refusal rejects here), then yields the records as they come. */
export async function openEvents(url: string, token: string, options: { since?: number; types?: string; signal?: AbortSignal } = {}): Promise<AsyncGenerator<EventRecord>> {
  const source = await openEventFrames(url, token, options);
  return (async function* () {
    for await (const frame of source) yield frame.event;
  })();
}

/** The blocks of a server-sent event stream (the text between blank lines), as they arrive. */
export async function* sseBlocks(body: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      yield buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
    }
  }
}

async function* frames(body: AsyncIterable<Uint8Array>): AsyncGenerator<EventFrame> {
  for await (const block of sseBlocks(body)) {
    const lines = block.split('\n');
    const data = lines.find((l) => l.startsWith('data: '));
    const id = lines.find((l) => l.startsWith('id: '));
    if (data) yield { id: id === undefined ? undefined : Number(id.slice(4)), event: JSON.parse(data.slice(6)) as EventRecord };
  }
}
