// The event log over a real LMDB: an event goes out (to listeners, and to replays) only once its
// log write is durable, in order; one the log cannot take goes out in its turn without a number.
import { rmSync } from 'node:fs';
import test from 'ava';
import type { EventRecord } from '../../src/domain/events.js';
import { EventLog } from '../../src/events/log.js';
import { StoreUnavailable } from '../../src/store/failures.js';
import { openStore, type Store } from '../../src/store/store.js';
import { tempDir } from '../helpers/service.js';

const body = (i: number) => ({ type: 'scaling.request' as const, group: 'g', role: 'edge' as const, region: `r${i}`, reason: 'test' });

function opened(t: { teardown(fn: () => unknown): void }): { dir: string; store: Store } {
  const dir = tempDir();
  const store = openStore(dir);
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { dir, store };
}

/** Resolves with the events `log` sends, once `count` have gone out. */
function sent(log: EventLog, count: number): Promise<EventRecord[]> {
  const out: EventRecord[] = [];
  return new Promise((resolve) => {
    const stop = log.subscribe((e) => {
      out.push(e);
      if (out.length === count) {
        stop();
        resolve(out);
      }
    });
  });
}

test('an event goes out, and can be replayed, only once its log write is durable', async (t) => {
  const { store } = opened(t);
  const log = new EventLog(store);
  const out = sent(log, 2);
  log.append([body(1), body(2)]);
  t.is(log.waiting, 2, 'held until written');
  t.deepEqual(log.since(0), [], 'not replayable before it is in the log');
  t.is(log.last, 0);
  t.deepEqual(
    (await out).map((e) => e.seq),
    [1, 2],
  );
  t.is(log.waiting, 0);
  t.is(log.last, 2);
  t.deepEqual(
    log.since(0).map((e) => e.seq),
    [1, 2],
  );
  t.deepEqual(
    log.since(1).map((e) => e.seq),
    [2],
  );
  t.deepEqual(store.events.get(2)?.seq, 2, 'what went out is in LMDB');
});

test('after a restart, earlier events come from LMDB and numbering goes on above them', async (t) => {
  const dir = tempDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let store = openStore(dir);
  const first = new EventLog(store);
  const out = sent(first, 3);
  first.append([body(1), body(2), body(3)]);
  await out;
  await store.close();
  store = openStore(dir);
  t.teardown(() => store.close());
  const log = new EventLog(store);
  t.is(log.last, 3);
  const next = sent(log, 1);
  log.append([body(4)]);
  t.is((await next)[0]!.seq, 4);
  t.deepEqual(
    log.since(1).map((e) => e.seq),
    [2, 3, 4],
  );
  t.deepEqual(
    log.since(0, 2).map((e) => e.seq),
    [1, 2],
  );
});

test('the log keeps the last `keep` events, trimming every 500', async (t) => {
  const { store } = opened(t);
  const log = new EventLog(store, 100);
  const out = sent(log, 600);
  for (let i = 0; i < 30; i++) log.append(Array.from({ length: 20 }, (_, j) => body(i * 20 + j)));
  await out;
  // The trim is written like any event: once the next append is out, it is in.
  const after = sent(log, 1);
  log.append([body(600)]);
  await after;
  // Trimmed once 500 were logged (below 500 - keep), and not again before the next 500.
  const kept = log.since(0, 10_000);
  t.is(kept[0]!.seq, 401);
  t.is(kept.at(-1)!.seq, 601);
  t.is(kept.length, 201);
});

test('an event the log cannot take goes out in its turn, without a number; numbering resumes with the next logged one', async (t) => {
  const { store } = opened(t);
  const log = new EventLog(store);
  const out = sent(log, 3);
  log.append([body(1)]);
  const check = store.guard.check.bind(store.guard);
  store.guard.check = () => {
    throw new StoreUnavailable(new Error('no space left on the device'));
  };
  log.append([body(2)]);
  store.guard.check = check;
  log.append([body(3)]);
  const events = await out;
  t.deepEqual(
    events.map((e) => [e.type === 'scaling.request' ? e.region : '', e.seq]),
    [
      ['r1', 1],
      ['r2', undefined],
      ['r3', 2],
    ],
  );
  t.deepEqual(
    log.since(0).map((e) => e.seq),
    [1, 2],
    'only logged events replay',
  );
});
