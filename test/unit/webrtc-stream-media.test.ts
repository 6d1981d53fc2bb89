// A WebRTC node's per-stream media figures (src/agent/webrtc/stream-media.ts): bit rates from byte
// counters between heartbeats, on a clock the test gives; always within the heartbeat schema.
import test from 'ava';
import fc from 'fast-check';
import { codecName, MediaRates } from '../../src/agent/webrtc/stream-media.js';
import { StreamMediaSchema } from '../../src/schemas/heartbeat.js';
import { compile } from '../../src/schemas/validate.js';

const valid = compile(StreamMediaSchema);

test('a bit rate is the bytes counted since the previous report over its time; at first, or when the counters began again, since the stream began', (t) => {
  const rates = new MediaRates();
  const at = (bytesIn: number, bytesOut: number, now: number, since = 1000) => rates.report([{ name: 'cam1', media: { bytesIn, bytesOut, since, video: { codec: 'VP8' } } }], now).get('cam1');
  t.deepEqual(at(50_000, 100_000, 3000), { bitrateIn: 200_000, bitrateOut: 400_000, uptimeMs: 2000, video: { codec: 'VP8' } });
  t.like(at(75_000, 100_000, 4000), { bitrateIn: 200_000, bitrateOut: 0, uptimeMs: 3000 });
  // A new publisher: its hub's counters are new, and so is its start.
  t.like(at(1_000, 2_000, 5000, 4000), { bitrateIn: 8000, bitrateOut: 16_000, uptimeMs: 1000 });
  // An engine that counts no bytes (Janus) says how long, and the codecs, only.
  t.deepEqual(rates.report([{ name: 'cam2', media: { since: 4000, audio: { codec: 'opus' } } }, { name: 'cam3' }], 5000), new Map([['cam2', { uptimeMs: 1000, audio: { codec: 'opus' } }]]));
});

test('whatever the counters and clock say, the figures are never negative and always pass the heartbeat schema', (t) => {
  const reading = fc.record({
    bytesIn: fc.option(fc.double({ min: 0, max: 1e16, noNaN: true }), { nil: undefined }),
    bytesOut: fc.option(fc.double({ min: 0, max: 1e16, noNaN: true }), { nil: undefined }),
    since: fc.integer({ min: 0, max: 2e12 }),
    now: fc.integer({ min: 0, max: 2e12 }),
  });
  fc.assert(
    fc.property(fc.array(reading, { minLength: 1, maxLength: 8 }), (readings) => {
      const rates = new MediaRates();
      for (const r of readings) {
        const m = rates
          .report([{ name: 's', media: { ...(r.bytesIn !== undefined ? { bytesIn: r.bytesIn } : {}), ...(r.bytesOut !== undefined ? { bytesOut: r.bytesOut } : {}), since: r.since } }], r.now)
          .get('s')!;
        if (!valid.check(m)) return false;
        if ((m.bitrateIn ?? 0) < 0 || (m.bitrateOut ?? 0) < 0) return false;
      }
      return true;
    }),
  );
  t.pass();
});

test('codec names are what the schema takes', (t) => {
  t.is(codecName('video/VP8'), 'VP8');
  t.is(codecName('audio/opus'), 'opus');
  fc.assert(fc.property(fc.string({ maxLength: 80 }), (s) => /^[A-Za-z0-9._ -]{0,32}$/.test(codecName(s))));
  t.pass();
});
