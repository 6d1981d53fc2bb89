// Webhooks in cluster mode (src/cluster/webhook-keeping.ts, src/webhooks/webhooks.ts): the sender
// changes hands, cleanly (a hand-over: pause, then the next one leads) or by a crash (kill -9: the
// request under way may have arrived, the states not yet written are lost). Two instances share
// the kept states as the cluster's bucket does (only the sender writes; writes land a little
// later); the receiver takes everything. Whatever the events and the changes: every event arrives,
// the first arrivals in id order; a repeat only after a crash, and only of what had arrived before
// it; none with clean hand-overs alone.
import test from 'ava';
import fc from 'fast-check';
import type { EventRecord } from '../../src/domain/events.js';
import type { DeliveryState } from '../../src/policy/webhooks.js';
import type { WebhookEndpoint } from '../../src/webhooks/delivery.js';
import { WebhookSender } from '../../src/cluster/webhook-keeping.js';
import { type WebhookKeeping, Webhooks } from '../../src/webhooks/webhooks.js';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const ENDPOINT: WebhookEndpoint = { id: 'rx', url: 'http://127.3.0.9:9/', secret: SECRET, filter: {}, allowLinkLocal: false, source: 'api' };
const settle = async (n = 30) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

/** The bucket as the instances share it: states written by the sender land at the next turn; a crash drops what had not landed. */
class Bucket {
  readonly states = new Map<string, DeliveryState>();
  keeping(inst: { sender: WebhookSender | null; dead: boolean }): WebhookKeeping {
    const pending: Array<() => void> = [];
    return {
      endpoints: () => [ENDPOINT],
      putEndpoint: async () => {},
      removeEndpoint: async () => {},
      removeState: async () => {},
      state: (id) => this.states.get(id),
      putState: (id, s) => {
        if (!inst.sender?.leading) return;
        const write = () => {
          if (!inst.dead) this.states.set(id, s);
        };
        pending.push(write);
        setImmediate(() => pending.shift()?.());
      },
      flush: async () => {
        while (pending.length) pending.shift()!();
      },
    };
  }
}

test('a sender handed over or killed at any point: every event arrives, in order; repeats only after a kill, of what had arrived', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.tuple(fc.constantFrom('event' as const, 'event' as const, 'handover' as const, 'kill' as const), fc.integer({ min: 0, max: 3 })), { maxLength: 40 }),
      async (steps) => {
        const log: EventRecord[] = [];
        const listeners = new Set<(e: EventRecord) => void>();
        const events = {
          get last() {
            return log.length;
          },
          oldest: () => (log.length ? 1 : 0),
          since: (seq: number, limit: number) => log.slice(seq, seq + limit),
          subscribe: (l: (e: EventRecord) => void) => {
            listeners.add(l);
            return () => listeners.delete(l);
          },
        };
        const received: number[] = [];
        const bucket = new Bucket();
        bucket.states.set('rx', { cursor: 0, backlog: 0, delivered: 0, failures: 0, consecutiveFailures: 0, lost: 0, lastSuccessAt: null, lastAttemptAt: null, lastError: null, nextAttemptAt: null });
        const make = () => {
          const inst = { sender: null as WebhookSender | null, dead: false, webhooks: null as unknown as Webhooks };
          inst.webhooks = new Webhooks({
            events,
            keeping: bucket.keeping(inst),
            sending: () => !!inst.sender?.leading && !inst.dead,
            now: () => 0,
            post: async (_url, body) => {
              await new Promise((r) => setImmediate(r));
              if (inst.dead) throw new Error('killed');
              received.push((JSON.parse(body) as { data: { seq: number } }).data.seq);
              return { status: 204, body: '' };
            },
          });
          // As runtime.ts drives it from the lease; the bucket's states are read directly here.
          inst.sender = new WebhookSender({ load: async () => {} }, inst.webhooks);
          return inst;
        };
        let sender = make();
        let other = make();
        await sender.webhooks.start([]);
        await other.webhooks.start([]);
        await sender.sender!.lead();
        let killedAfter: number | null = null;
        // Each step, then `turns` turns of the event loop: a request may be under way at the next.
        for (const [step, turns] of steps) {
          if (step === 'event') {
            const e = { type: 'stream.live', group: 'g', stream: 's', origin: 'o', seq: log.length + 1, at: 0 } as unknown as EventRecord;
            log.push(e);
            for (const l of listeners) l(e);
          } else if (step === 'handover') {
            // A hand-over (ownership.ts giveBack): the release, then the next one's acquire.
            await sender.sender!.unlead();
            [sender, other] = [other, sender];
            await sender.sender!.lead();
          } else {
            // kill -9: the request under way may arrive or not; states not landed are lost. A new instance takes its place.
            sender.dead = true;
            sender.webhooks.stop();
            killedAfter = Math.max(killedAfter ?? 0, ...received);
            sender = make();
            await sender.webhooks.start([]);
            [sender, other] = [other, sender];
            await sender.sender!.lead();
          }
          await settle(turns);
        }
        await settle(20 + log.length * 6);
        const firsts = received.filter((s, k) => received.indexOf(s) === k);
        if (JSON.stringify(firsts) !== JSON.stringify(log.map((e) => e.seq))) return false;
        const repeats = received.filter((s, k) => received.indexOf(s) !== k);
        if (killedAfter === null) return repeats.length === 0;
        return repeats.every((s) => s <= killedAfter!);
      },
    ),
    { numRuns: 150 },
  );
  t.pass();
});
