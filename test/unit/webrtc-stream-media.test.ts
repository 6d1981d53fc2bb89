// A WebRTC node's per-stream media figures (src/agent/webrtc/stream-media.ts): bit rates from byte
// counters and the frame rate from a frame counter between heartbeats, on a clock the test gives;
// always within the heartbeat schema.
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
  // An engine that counts no bytes says how long, and the codecs, only.
  t.deepEqual(rates.report([{ name: 'cam2', media: { since: 4000, audio: { codec: 'opus' } } }, { name: 'cam3' }], 5000), new Map([['cam2', { uptimeMs: 1000, audio: { codec: 'opus' } }]]));
});

test('each counter on its own: one the engine does not keep (a Janus edge’s bytes in) leaves the other’s rate between reports', (t) => {
  const rates = new MediaRates();
  const at = (media: { bytesIn?: number; bytesOut?: number }, now: number) => rates.report([{ name: 'cam1', media: { ...media, since: 1000 } }], now).get('cam1');
  t.deepEqual(at({ bytesOut: 10_000 }, 2000), { bitrateOut: 80_000, uptimeMs: 1000 });
  // Over the second since the previous report, not the two since the stream began.
  t.deepEqual(at({ bytesOut: 30_000 }, 3000), { bitrateOut: 160_000, uptimeMs: 2000 });
  // The in counter appears (a publisher's first reading): since the stream began; the out counter goes on between reports.
  t.deepEqual(at({ bytesIn: 6_000, bytesOut: 40_000 }, 4000), { bitrateIn: 16_000, bitrateOut: 80_000, uptimeMs: 3000 });
  // The out counter began again (its viewers were counted afresh): it alone counts from the stream's start.
  t.deepEqual(at({ bytesIn: 8_000, bytesOut: 5_000 }, 5000), { bitrateIn: 16_000, bitrateOut: 10_000, uptimeMs: 4000 });
});

test('the frame rate is the video frames counted since the previous report over its time, to a tenth; none without video', (t) => {
  const rates = new MediaRates();
  const at = (framesIn: number, now: number, video = true) =>
    rates.report([{ name: 'cam1', media: { framesIn, since: 1000, ...(video ? { video: { codec: 'VP8', width: 320, height: 240 } } : {}) } }], now).get('cam1');
  t.deepEqual(at(60, 3000), { uptimeMs: 2000, video: { codec: 'VP8', width: 320, height: 240, fps: 30 } });
  // 29.97 frames a second over the next 10 s.
  t.like(at(60 + 299.7, 13_000), { video: { fps: 30 } });
  t.like(at(60 + 299.7 + 24, 14_000), { video: { fps: 24 } });
  t.like(at(60 + 299.7 + 24 + 5, 15_000), { video: { fps: 5 } });
  t.like(at(60 + 299.7 + 24 + 5 + 37, 25_000), { video: { fps: 3.7 } });
  // An audio-only stream has no frame rate.
  t.deepEqual(at(1000, 26_000, false), { uptimeMs: 25_000 });
});

test('whatever the counters and clock say, the figures are never negative and always pass the heartbeat schema', (t) => {
  const reading = fc.record({
    bytesIn: fc.option(fc.double({ min: 0, max: 1e16, noNaN: true }), { nil: undefined }),
    bytesOut: fc.option(fc.double({ min: 0, max: 1e16, noNaN: true }), { nil: undefined }),
    framesIn: fc.option(fc.double({ min: 0, max: 1e16, noNaN: true }), { nil: undefined }),
    since: fc.integer({ min: 0, max: 2e12 }),
    now: fc.integer({ min: 0, max: 2e12 }),
  });
  fc.assert(
    fc.property(fc.array(reading, { minLength: 1, maxLength: 8 }), (readings) => {
      const rates = new MediaRates();
      for (const r of readings) {
        const m = rates
          .report(
            [
              {
                name: 's',
                media: {
                  ...(r.bytesIn !== undefined ? { bytesIn: r.bytesIn } : {}),
                  ...(r.bytesOut !== undefined ? { bytesOut: r.bytesOut } : {}),
                  ...(r.framesIn !== undefined ? { framesIn: r.framesIn } : {}),
                  since: r.since,
                  video: { codec: 'VP8' },
                },
              },
            ],
            r.now,
          )
          .get('s')!;
        if (!valid.check(m)) return false;
        if ((m.bitrateIn ?? 0) < 0 || (m.bitrateOut ?? 0) < 0 || (m.video?.fps ?? 0) < 0) return false;
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
