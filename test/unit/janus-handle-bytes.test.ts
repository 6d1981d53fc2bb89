// Janus's handle_info answers made into each stream's byte counters (src/agent/webrtc/janus/handle-bytes.ts):
// the answers Janus 1.1.2 really gave (test/fixtures/janus, a publisher and a Streaming viewer),
// odd and hostile answers, and totals that only grow while handles come, go and begin counting again.
import { readFileSync } from 'node:fs';
import test from 'ava';
import fc from 'fast-check';
import { type CountedHandle, type HandleBytes, handleBytes, StreamBytes } from '../../src/agent/webrtc/janus/handle-bytes.js';
import { projectPath } from '../../src/paths.js';

const fixture = (name: string): unknown => JSON.parse(readFileSync(projectPath('test', 'fixtures', 'janus', name), 'utf8'));

test('Janus 1.1.2’s answers: a publisher’s RTP bytes in, a viewer’s RTP bytes out, over its m-lines (not the DTLS counters)', (t) => {
  t.deepEqual(handleBytes(fixture('handle-info-1.1.2-publisher.json')), { bytesIn: 195_092, bytesOut: 0 });
  t.deepEqual(handleBytes(fixture('handle-info-1.1.2-viewer.json')), { bytesIn: 0, bytesOut: 180_921 });
});

test('odd answers: an error or no info counts nothing known; no PeerConnection yet, or counters not integers, count zero', (t) => {
  t.is(handleBytes({ janus: 'error', error: { code: 459, reason: 'No such handle' } }), null);
  t.is(handleBytes({ janus: 'success' }), null);
  t.is(handleBytes(null), null);
  t.is(handleBytes('success'), null);
  t.is(handleBytes([{ janus: 'success', info: {} }]), null);
  t.deepEqual(handleBytes({ janus: 'success', info: { plugin: 'janus.plugin.videoroom' } }), { bytesIn: 0, bytesOut: 0 });
  const media = (stats: unknown) => ({ janus: 'success', info: { webrtc: { media: { v: { stats }, a: { stats: { in: { bytes: 10 }, out: { bytes: 20 } } } } } } });
  t.deepEqual(handleBytes(media({ in: { bytes: -5 }, out: { bytes: 1.5 } })), { bytesIn: 10, bytesOut: 20 });
  t.deepEqual(handleBytes(media({ in: { bytes: '99' }, out: { bytes: 2 ** 60 } })), { bytesIn: 10, bytesOut: 20 });
  t.deepEqual(handleBytes(media({ in: [1], out: null })), { bytesIn: 10, bytesOut: 20 });
  t.deepEqual(handleBytes(media('x')), { bytesIn: 10, bytesOut: 20 });
  t.deepEqual(handleBytes({ janus: 'success', info: { webrtc: { media: [{ stats: { in: { bytes: 7 } } }] } } }), { bytesIn: 0, bytesOut: 0 }, 'media is an object by mid, not a list');
});

test('any JSON at all: never throws, and counts non-negative safe integers or nothing', (t) => {
  const answer = fc.oneof(
    fc.jsonValue(),
    fc.record({ janus: fc.constantFrom('success', 'error'), info: fc.record({ webrtc: fc.record({ media: fc.dictionary(fc.string(), fc.jsonValue()) }) }) }),
    fc.record({
      janus: fc.constant('success'),
      info: fc.record({
        webrtc: fc.record({
          media: fc.dictionary(
            fc.string(),
            fc.record({ stats: fc.record({ in: fc.record({ bytes: fc.oneof(fc.integer(), fc.double(), fc.jsonValue()) }), out: fc.record({ bytes: fc.jsonValue() }) }) }),
          ),
        }),
      }),
    }),
  );
  fc.assert(
    fc.property(answer, (a) => {
      const r = handleBytes(a);
      return r === null || [r.bytesIn, r.bytesOut].every((n) => Number.isSafeInteger(n) && n >= 0);
    }),
  );
  t.pass();
});

const answerOf = (b: HandleBytes) => ({ janus: 'success', info: { webrtc: { media: { '0': { stats: { in: { bytes: b.bytesIn }, out: { bytes: b.bytesOut } } } } } } });

test('totals: what each handle adds since its last reading; a handle counting again from zero adds all it counts; an unread handle adds nothing', (t) => {
  const totals = new StreamBytes();
  const pub: CountedHandle = { id: 'p', stream: 'cam', counts: 'in' };
  const v1: CountedHandle = { id: 'v1', stream: 'cam', counts: 'out' };
  const v2: CountedHandle = { id: 'v2', stream: 'cam', counts: 'out' };
  const read = (entries: Array<[string, number, number]>) => new Map(entries.map(([id, i, o]) => [id, handleBytes(answerOf({ bytesIn: i, bytesOut: o }))!]));
  t.is(totals.of('cam'), undefined, 'nothing read yet');
  totals.update([pub, v1], read([['p', 1000, 5]]));
  t.deepEqual(totals.of('cam'), { bytesIn: 1000, bytesOut: 0 }, 'a publisher’s bytes out (RTCP) do not count; an unread viewer adds nothing');
  totals.update(
    [pub, v1, v2],
    read([
      ['p', 1500, 0],
      ['v1', 0, 300],
      ['v2', 0, 200],
    ]),
  );
  t.deepEqual(totals.of('cam'), { bytesIn: 1500, bytesOut: 500 });
  // v1 left: what it sent stays counted. The publisher's counters began again (a new PeerConnection under the same handle).
  totals.update(
    [pub, v2],
    read([
      ['p', 100, 0],
      ['v2', 0, 250],
    ]),
  );
  t.deepEqual(totals.of('cam'), { bytesIn: 1600, bytesOut: 550 });
  // The admin API did not answer this time: the totals stay, and the next reading adds only what is new.
  totals.update([pub, v2], new Map());
  t.deepEqual(totals.of('cam'), { bytesIn: 1600, bytesOut: 550 });
  totals.update(
    [pub, v2],
    read([
      ['p', 400, 0],
      ['v2', 0, 260],
    ]),
  );
  t.deepEqual(totals.of('cam'), { bytesIn: 1900, bytesOut: 560 });
  // Everyone left: the stream and its handles are forgotten; a stream of that name again starts from zero.
  totals.update([], new Map());
  t.is(totals.of('cam'), undefined);
  totals.update([v1], read([['v1', 0, 400]]));
  t.deepEqual(totals.of('cam'), { bytesIn: 0, bytesOut: 400 });
});

test('whatever handles come, go, are read or not and begin again, a stream’s totals never fall while it has handles, and are what its handles’ readings added', (t) => {
  const ids = ['p1', 'p2', 'v1', 'v2', 'v3'];
  const handleOf = (id: string, stream: string): CountedHandle => ({ id, stream, counts: id.startsWith('p') ? 'in' : 'out' });
  const round = fc.record({
    live: fc.subarray(ids),
    // Per handle: what it adds (or a reset to a small count), and whether it is read.
    steps: fc.array(fc.record({ add: fc.nat(10_000), reset: fc.boolean(), read: fc.boolean() }), { minLength: ids.length, maxLength: ids.length }),
  });
  fc.assert(
    fc.property(fc.array(round, { maxLength: 12 }), fc.constantFrom('a', 'b'), (rounds, stream) => {
      const totals = new StreamBytes();
      const counts = new Map<string, number>();
      /** The totals as a model counts them: each reading's increase over the handle's previous one, or all of it after a reset. */
      let modelIn = 0;
      let modelOut = 0;
      let before = { bytesIn: 0, bytesOut: 0 };
      const lastRead = new Map<string, number>();
      for (const r of rounds) {
        const readings = new Map<string, HandleBytes>();
        for (const [i, id] of ids.entries()) {
          const step = r.steps[i]!;
          if (!r.live.includes(id)) {
            counts.delete(id);
            lastRead.delete(id);
            continue;
          }
          const was = counts.get(id) ?? 0;
          const now = step.reset && was > 0 ? Math.min(was - 1, step.add) : was + step.add;
          counts.set(id, now);
          if (!step.read) continue;
          const prev = lastRead.get(id);
          const added = prev !== undefined && now >= prev ? now - prev : now;
          if (id.startsWith('p')) modelIn += added;
          else modelOut += added;
          lastRead.set(id, now);
          readings.set(id, id.startsWith('p') ? { bytesIn: now, bytesOut: 0 } : { bytesIn: 0, bytesOut: now });
        }
        totals.update(
          r.live.map((id) => handleOf(id, stream)),
          readings,
        );
        const got = totals.of(stream);
        if (r.live.length === 0) {
          if (got !== undefined) return false;
          modelIn = modelOut = 0;
          before = { bytesIn: 0, bytesOut: 0 };
          continue;
        }
        const now = got ?? { bytesIn: 0, bytesOut: 0 };
        if (now.bytesIn < before.bytesIn || now.bytesOut < before.bytesOut) return false;
        if (now.bytesIn !== modelIn || now.bytesOut !== modelOut) return false;
        before = now;
      }
      return true;
    }),
  );
  t.pass();
});
