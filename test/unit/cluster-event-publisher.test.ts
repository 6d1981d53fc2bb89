// The cluster's event publisher (src/cluster/event-publisher.ts) against a stream that loses its
// leader for a while, on a fake clock: every event is logged once, in the order it was queued,
// however long the stream was away, as long as it came back within GIVE_UP_MS of the event; an
// event the stream did not take in time is given up, and never logged.
import test from 'ava';
import fc from 'fast-check';
import type { EventRecord } from '../../src/domain/events.js';
import { EventPublisher, GIVE_UP_MS, type Published } from '../../src/cluster/event-publisher.js';
import type { Jet } from '../../src/cluster/nats.js';

/** A stream that takes messages only while `up(now)`, and keeps a message id once (JetStream's duplicate window). */
class FakeStream {
  readonly logged: string[] = [];
  private readonly seqOf = new Map<string, number>();
  now = 0;

  constructor(private readonly up: (now: number) => boolean) {}

  readonly jet = {
    js: {
      publish: async (_subject: string, _data: string, options: { msgID: string }) => {
        await Promise.resolve();
        if (!this.up(this.now)) throw new Error('no responders: the stream has no leader');
        const had = this.seqOf.get(options.msgID);
        if (had !== undefined) return { seq: had, duplicate: true };
        this.logged.push(options.msgID);
        this.seqOf.set(options.msgID, this.logged.length);
        return { seq: this.logged.length, duplicate: false };
      },
    },
  } as unknown as Jet;
}

const record = (i: number) => ({ type: 'store.recovered', group: 'g', at: i }) as unknown as EventRecord;

/** Queues `count` events at the clock's start; resolves with what became of each once all are settled. */
function publishAll(stream: FakeStream, count: number): Promise<Published[]> {
  const publisher = new EventPublisher(
    stream.jet,
    () => stream.now,
    async (ms) => {
      stream.now += ms;
    },
  );
  const results: Published[] = new Array(count);
  let calls = 0;
  return new Promise((resolve) => {
    for (let i = 0; i < count; i++)
      publisher.publish('sy.ev.i1', record(i), `m${i}`, (r) => {
        calls++;
        results[i] = r;
        if (calls === count) resolve(results);
      });
  });
}

test('through a leader election shorter than GIVE_UP_MS, every event is logged once, in order', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 0, max: GIVE_UP_MS - 1 }), async (count, downMs) => {
      const stream = new FakeStream((now) => now >= downMs);
      const results = await publishAll(stream, count);
      const ids = Array.from({ length: count }, (_, i) => `m${i}`);
      return results.every((r) => r !== null) && JSON.stringify(stream.logged) === JSON.stringify(ids) && results.every((r, i) => r!.seq === i + 1);
    }),
  );
  t.pass();
});

test('an acknowledgement lost is sent again and recognised: the stream holds it once', async (t) => {
  // The stream takes the first attempt but its answer is lost (the client sees a failure).
  let first = true;
  const stream = new FakeStream(() => true);
  const publish = stream.jet.js.publish.bind(stream.jet.js);
  (stream.jet.js as { publish: typeof publish }).publish = async (subject, data, options) => {
    const ack = await publish(subject, data, options as never);
    if (first) {
      first = false;
      throw new Error('timeout');
    }
    return ack;
  };
  const results = await publishAll(stream, 3);
  t.deepEqual(stream.logged, ['m0', 'm1', 'm2']);
  t.deepEqual(
    results.map((r) => r?.seq),
    [1, 2, 3],
  );
});

test('a stream away for longer than GIVE_UP_MS: each event is given up once it has waited that long, and none is logged', async (t) => {
  const stream = new FakeStream((now) => now >= GIVE_UP_MS * 3);
  const results = await publishAll(stream, 5);
  t.deepEqual(results, [null, null, null, null, null]);
  t.deepEqual(stream.logged, []);
  t.true(stream.now >= GIVE_UP_MS && stream.now < GIVE_UP_MS * 2, `given up at ${stream.now} ms`);
});
