// Webhook delivery's rules (src/policy/webhooks.ts) and one endpoint's delivery loop
// (src/webhooks/delivery.ts) on a fake clock and a fake receiver: whatever fails when, every
// wanted event is taken once in order (an attempt that failed is sent again, never skipped), the
// cursor never passes an event not taken, and waits double up to their cap.
import test from 'ava';
import fc from 'fast-check';
import type { EventRecord } from '../../src/domain/events.js';
import { freshDelivery, LAST_RETRY_MS, retryDelay, wants } from '../../src/policy/webhooks.js';
import { EndpointDelivery } from '../../src/webhooks/delivery.js';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const TYPES = ['stream.live', 'stream.bound', 'node.state', 'provision.changed'] as const;
const event = (seq: number, type: (typeof TYPES)[number], group = 'g', stream = 's'): EventRecord => ({ type, group, stream, origin: 'o', seq, at: 1000 * seq }) as unknown as EventRecord;

test('filters: types exact or by family, groups, streams; none asks nothing', (t) => {
  const e = event(1, 'stream.live', 'g1', 'cam');
  t.true(wants({}, e));
  t.true(wants({ events: ['stream.*'] }, e));
  t.true(wants({ events: ['node.state', 'stream.live'] }, e));
  t.false(wants({ events: ['stream.bound'] }, e));
  t.false(wants({ events: ['str.*'] }, e));
  t.true(wants({ groups: ['g1'], streams: ['cam'] }, e));
  t.false(wants({ groups: ['g2'] }, e));
  t.false(wants({ streams: ['other'] }, e));
  t.false(wants({ streams: ['cam'] }, { ...event(2, 'node.state'), stream: undefined } as unknown as EventRecord), 'a stream filter takes stream events only');
});

test('the wait before a retry doubles from a second and stops at ten minutes, with at most a tenth of jitter', (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 60 }), fc.double({ min: 0, max: 0.999, noNaN: true }), (failures, r) => {
      const d = retryDelay(failures, () => r);
      const base = Math.min(LAST_RETRY_MS, 1000 * 2 ** (failures - 1));
      return d >= base && d <= base * 1.1 + 1 && retryDelay(failures + 1, () => 0) >= retryDelay(failures, () => 0);
    }),
  );
  t.pass();
});

test('whatever attempts fail, each wanted event is taken once, in order; the cursor never passes one not taken', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.constantFrom(...TYPES), { minLength: 1, maxLength: 30 }),
      fc.array(fc.boolean(), { maxLength: 80 }),
      fc.constantFrom<string[] | undefined>(undefined, ['stream.*'], ['node.state']),
      async (types, failPattern, wanted) => {
        const log = types.map((type, i) => event(i + 1, type));
        let now = 0;
        const taken: number[] = [];
        let attempt = 0;
        const retries: Array<() => void> = [];
        const d = new EndpointDelivery({ id: 'x', url: 'http://127.0.0.1:9/', secret: SECRET, filter: wanted ? { events: wanted } : {}, allowLinkLocal: false, source: 'api' }, freshDelivery(0), {
          events: { last: log.length, oldest: () => 1, since: (seq, limit) => log.filter((e) => e.seq > seq).slice(0, limit) },
          post: async (_url, body, headers) => {
            const ok = !(failPattern[attempt++] ?? false);
            const seq = (JSON.parse(body) as { data: { seq: number } }).data.seq;
            if (headers['webhook-id'] !== String(seq)) throw new Error('webhook-id is not the event id');
            if (ok) taken.push(seq);
            return { status: ok ? 204 : 500, body: '' };
          },
          save: () => {},
          now: () => now,
          random: () => 0,
          observe: () => {},
          retryAfter: (ms, fire) => {
            retries.push(() => {
              now += ms;
              fire();
            });
            return () => {};
          },
        });
        d.kick();
        // Fire retries until nothing is left to do (each failure arms one; bounded by the pattern).
        for (let i = 0; i < 200; i++) {
          await new Promise((r) => setImmediate(r));
          const next = retries.shift();
          if (next) next();
          else if (d.current.cursor === log.length) break;
        }
        const expected = log.filter((e) => !wanted || wanted.some((w) => w === e.type || (w.endsWith('.*') && e.type.startsWith(w.slice(0, -1))))).map((e) => e.seq);
        return JSON.stringify(taken) === JSON.stringify(expected) && d.current.cursor === log.length && d.current.delivered === expected.length;
      },
    ),
    { numRuns: 200 },
  );
  t.pass();
});

test('events the log dropped before they were sent are counted lost, and delivery goes on from the oldest it holds', async (t) => {
  const log = [event(50, 'stream.live'), event(51, 'stream.live')];
  const taken: number[] = [];
  const d = new EndpointDelivery({ id: 'x', url: 'http://127.0.0.1:9/', secret: SECRET, filter: {}, allowLinkLocal: false, source: 'api' }, freshDelivery(10), {
    events: { last: 51, oldest: () => 50, since: (seq, limit) => log.filter((e) => e.seq > seq).slice(0, limit) },
    post: async (_u, body) => {
      taken.push((JSON.parse(body) as { data: { seq: number } }).data.seq);
      return { status: 200, body: '' };
    },
    save: () => {},
    now: () => 0,
    random: () => 0,
    observe: () => {},
  });
  d.kick();
  for (let i = 0; i < 20 && d.current.cursor < 51; i++) await new Promise((r) => setImmediate(r));
  t.deepEqual(taken, [50, 51]);
  t.like(d.current, { lost: 39, delivered: 2, cursor: 51, backlog: 0 });
});
