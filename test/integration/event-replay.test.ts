// A client resuming the event stream (GET /as/v1/events, ?since= or Last-Event-ID) gets everything
// the log still holds after its id, in pages, then the live events: no gap and no duplicate, over a
// log of more than 10,000 events (the log keeps 10,000) and with events appended during the replay.
// The same in cluster mode: test/cluster/event-log.test.ts.
import test from 'ava';
import type { EventBody } from '../../src/domain/events.js';
import { openEventFrames } from '../../src/events/stream-client.js';
import { staticGroup, startTestService, type TestService } from '../helpers/service.js';

const body = (i: number): EventBody => ({ type: 'scaling.request', group: 'g', role: 'edge', region: `r${i}`, reason: 'replay test' });

/** Appends `n` events in batches of 100 and resolves once the log has sent them all. */
function appendAll(svc: TestService, n: number, from = 0): Promise<void> {
  const events = svc.service.services.events;
  const target = events.last + n;
  return new Promise((resolve) => {
    const stop = events.subscribe((e) => {
      if ((e.seq ?? 0) >= target) {
        stop();
        resolve();
      }
    });
    for (let i = 0; i < n; i += 100) events.append(Array.from({ length: Math.min(100, n - i) }, (_, k) => body(from + i + k)));
  });
}

/** Reads the stream from `since` until the event numbered `until`; the ids it carried, in order. */
async function ids(svc: TestService, options: { since?: number; lastEventId?: number }, until: () => number): Promise<number[]> {
  const controller = new AbortController();
  const out: number[] = [];
  try {
    for await (const frame of await openEventFrames(svc.url, svc.adminToken, { ...options, types: 'scaling.request', signal: controller.signal })) {
      if (frame.id !== undefined) out.push(frame.id);
      if (out.length > 0 && out.at(-1)! >= until()) break;
    }
  } finally {
    controller.abort();
  }
  return out;
}

const contiguous = (xs: number[]) => xs.every((x, i) => i === 0 || x === xs[i - 1]! + 1);

test('a replay from 0 carries all the log holds, then the live events, none twice and none missing', async (t) => {
  const svc = await startTestService({ groups: [staticGroup()] });
  t.teardown(() => svc.close());
  const events = svc.service.services.events;
  await appendAll(svc, 12_500);
  const before = events.last;

  // Events keep coming while the client reads the replay: they come after it, in order.
  const reading = ids(svc, { since: 0 }, () => before + 600);
  const live = appendAll(svc, 600, 20_000);
  const got = await reading;
  await live;
  // The log keeps its last 10,000 (trimmed in the background every 500): the replay starts at the
  // oldest it held, at least 10,000 back, and carries every event from there.
  t.true(got[0]! <= before - 10_000 + 1, `from ${got[0]}`);
  t.true(contiguous(got), `no gap and no duplicate (first ${got[0]}, last ${got.at(-1)}, ${got.length} events)`);
  t.is(got.at(-1), before + 600);

  // Resuming with Last-Event-ID further back than a page: everything after it.
  const resumed = await ids(svc, { lastEventId: before - 4321 }, () => events.last);
  t.is(resumed[0], before - 4320);
  t.true(contiguous(resumed));
  t.is(resumed.at(-1), events.last);
});
