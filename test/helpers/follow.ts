// Follows the event stream in the background, as a client does: every frame kept with its id,
// and a way to wait for one without sleeping.
import { openEventFrames, type EventFrame } from '../../src/events/stream-client.js';

export interface Follower {
  readonly frames: EventFrame[];
  /** The id a client resumes from: that of the last event that had one. */
  readonly lastId: number | undefined;
  /** The first frame that satisfies `ok`, once it has come (rejects if the stream ends first). */
  until(ok: (f: EventFrame) => boolean): Promise<EventFrame>;
  close(): Promise<void>;
}

/** From the start of the log, or resuming after `lastEventId` as a reconnecting EventSource does. */
export function follow(url: string, token: string, lastEventId?: number): Follower {
  const frames: EventFrame[] = [];
  const waiters = new Set<() => void>();
  const controller = new AbortController();
  let ended = false;
  const done = (async () => {
    try {
      for await (const f of await openEventFrames(url, token, { ...(lastEventId !== undefined ? { lastEventId } : { since: 0 }), signal: controller.signal })) {
        frames.push(f);
        for (const w of waiters) w();
      }
    } catch {
      /* the service went away, or the test let go */
    }
    ended = true;
    for (const w of waiters) w();
  })();
  return {
    frames,
    get lastId() {
      return frames.findLast((f) => f.id !== undefined)?.id;
    },
    async until(ok) {
      for (;;) {
        const found = frames.find(ok);
        if (found) return found;
        if (ended) throw new Error(`the event stream ended; saw ${frames.map((f) => `${f.id ?? '-'}:${f.event.type}`).join(', ')}`);
        await new Promise<void>((resolve) => {
          const wake = () => {
            waiters.delete(wake);
            resolve();
          };
          waiters.add(wake);
        });
      }
    },
    async close() {
      controller.abort();
      await done;
    },
  };
}
