// The client side of the event stream (GET /as/v1/events, server-sent events), for the demo, the
// benches and the tests, which all follow what the service says happened.
import type { EventRecord } from '../domain/events.js';

/** Connects (a refusal rejects here), then yields the records as they come. */
export async function openEvents(url: string, token: string, options: { since?: number; types?: string; signal?: AbortSignal } = {}): Promise<AsyncGenerator<EventRecord>> {
  const query = new URLSearchParams();
  if (options.types !== undefined) query.set('types', options.types);
  if (options.since !== undefined) query.set('since', String(options.since));
  const res = await fetch(`${url}/as/v1/events${query.size > 0 ? `?${query}` : ''}`, {
    headers: { authorization: `Bearer ${token}` },
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (!res.ok || !res.body) throw new Error(`GET /as/v1/events answered ${res.status}: ${await res.text()}`);
  return records(res.body as unknown as AsyncIterable<Uint8Array>);
}

async function* records(body: AsyncIterable<Uint8Array>): AsyncGenerator<EventRecord> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const data = buffer.slice(0, end).split('\n').find((l) => l.startsWith('data: '));
      buffer = buffer.slice(end + 2);
      if (data) yield JSON.parse(data.slice(6)) as EventRecord;
    }
  }
}
