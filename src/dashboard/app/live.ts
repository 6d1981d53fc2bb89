// Follows GET /as/v1/events (server-sent events) with fetch: EventSource cannot send the bearer
// token. Replays the service's bounded log first (?since=0), then resumes with Last-Event-ID
// after any break, so no event is missed; a stream silent past three keep-alives (the service
// sends one every 15 s) is taken for dead and reopened.
import { ApiError, noticeAuthProblem, problemOf, type EventRecord } from './api.js';

export type LiveStatus = { state: 'connecting' } | { state: 'live' } | { state: 'retrying'; inMs: number; why: string } | { state: 'stopped'; why: string };

export interface FollowOptions {
  token: string;
  onEvents(events: EventRecord[]): void;
  onStatus(status: LiveStatus): void;
}

const SILENCE_MS = 45_000;
const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 15_000;

/** Splits a server-sent-events text into complete blocks; returns the records and what is left over. */
export function parseBlocks(buffer: string): { records: Array<{ id?: string; data?: string }>; rest: string } {
  const records: Array<{ id?: string; data?: string }> = [];
  const text = buffer.replace(/\r\n/g, '\n');
  let start = 0;
  let end: number;
  while ((end = text.indexOf('\n\n', start)) >= 0) {
    const record: { id?: string; data?: string } = {};
    for (const line of text.slice(start, end).split('\n')) {
      if (line.startsWith('id:')) record.id = line.slice(3).trim();
      else if (line.startsWith('data:')) record.data = (record.data === undefined ? '' : `${record.data}\n`) + line.slice(5).replace(/^ /, '');
    }
    if (record.id !== undefined || record.data !== undefined) records.push(record);
    start = end + 2;
  }
  return { records, rest: text.slice(start) };
}

/** Starts following; the returned function stops. */
export function follow(options: FollowOptions): () => void {
  const stop = new AbortController();
  let lastId: string | undefined;
  void (async () => {
    let delay = FIRST_RETRY_MS;
    while (!stop.signal.aborted) {
      let why = 'the stream ended';
      const attempt = new AbortController();
      const abortAttempt = () => attempt.abort();
      stop.signal.addEventListener('abort', abortAttempt);
      let watchdog: ReturnType<typeof setTimeout> | undefined;
      const arm = () => {
        clearTimeout(watchdog);
        watchdog = setTimeout(() => attempt.abort(), SILENCE_MS);
      };
      try {
        options.onStatus({ state: 'connecting' });
        arm();
        const res = await fetch(lastId === undefined ? '/as/v1/events?since=0' : '/as/v1/events', {
          headers: { authorization: `Bearer ${options.token}`, accept: 'text/event-stream', ...(lastId !== undefined ? { 'last-event-id': lastId } : {}) },
          cache: 'no-store',
          signal: attempt.signal,
        });
        if (!res.ok || !res.body) {
          const e = await problemOf(res);
          if (e.status === 401 || e.status === 403) {
            noticeAuthProblem(e);
            options.onStatus({ state: 'stopped', why: e.detail });
            return;
          }
          throw e;
        }
        options.onStatus({ state: 'live' });
        delay = FIRST_RETRY_MS;
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          arm();
          const parsed = parseBlocks(buffer + value);
          buffer = parsed.rest;
          const events: EventRecord[] = [];
          for (const r of parsed.records) {
            if (r.id !== undefined) lastId = r.id;
            if (r.data !== undefined) events.push(JSON.parse(r.data) as EventRecord);
          }
          if (events.length > 0) options.onEvents(events);
        }
      } catch (err) {
        if (stop.signal.aborted) return;
        why = attempt.signal.aborted ? 'no word from the service for 45 s' : err instanceof ApiError ? err.detail : 'the service cannot be reached';
        if (err instanceof ApiError && err.retryAfter) delay = Math.max(delay, err.retryAfter * 1000);
      } finally {
        clearTimeout(watchdog);
        stop.signal.removeEventListener('abort', abortAttempt);
      }
      if (stop.signal.aborted) return;
      options.onStatus({ state: 'retrying', inMs: delay, why });
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, delay);
        stop.signal.addEventListener(
          'abort',
          () => {
            clearTimeout(timer);
            resolve(undefined);
          },
          { once: true },
        );
      });
      delay = Math.min(delay * 2, MAX_RETRY_MS);
    }
  })();
  return () => stop.abort();
}
