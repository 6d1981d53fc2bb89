// Admission in the group model (docs/security.md, "Who may publish and play"): with admission on,
// a stream is only ever where its binding says; a node listing it anywhere else is told to drop
// its publisher, and is never followed (without admission, the model binds a stream where it is
// published: group-model.test.ts).
import test from 'ava';
import fc from 'fast-check';
import { parseConfig } from '../../src/config/load.js';
import { GroupModel } from '../../src/model/group-model.js';
import { staticGroup } from '../helpers/fixtures.js';

const T = 1_800_000_000_000;

function model(admission: object = {}) {
  const nodes = [
    { id: 'o1', role: 'origin', region: 'r1' },
    { id: 'o2', role: 'origin', region: 'r1' },
    { id: 'e1', role: 'edge', region: 'r1' },
    { id: 't1', role: 'transcoder', region: 'r1' },
  ];
  const g = parseConfig({ nodeGroups: [staticGroup({ regions: ['r1'], nodes, admission })] }, 'test').nodeGroups[0]!;
  const m = new GroupModel(g);
  for (const [i, n] of nodes.entries()) m.addNode({ id: n.id, role: n.role as 'origin', region: n.region, platform: { type: 'static', address: `10.0.0.${i + 1}` }, state: 'CREATED' }, T);
  for (const n of nodes) m.heartbeat(n.id, { ready: true, metrics: {} }, T);
  m.takeEffects();
  return m;
}

const publishing = (...names: string[]) => names.map((name) => ({ name, publishing: true }));

test('a stream published at an origin without a lookup is not bound there, and the reply drops its publisher', (t) => {
  const m = model();
  const reply = m.heartbeat('o1', { ready: true, metrics: {}, streams: publishing('sneaky') }, T + 10);
  t.deepEqual(reply?.drop, { at: T + 10, streams: ['sneaky'] });
  t.is(m.binding('sneaky'), undefined);
  t.like(m.subscribe('sneaky', ['r1'], T + 20), { ok: false, code: 'STREAM_NOT_FOUND' });
});

test('admission off: the same stream is bound where it is published, and nothing is dropped', (t) => {
  const m = model({ enabled: false });
  const reply = m.heartbeat('o1', { ready: true, metrics: {}, streams: publishing('cam') }, T + 10);
  t.is(reply?.drop, undefined);
  t.like(m.binding('cam'), { origin: 'o1', state: 'LIVE' });
});

test('when a binding moves, the old origin is told to drop the publisher it still lists; the new one keeps it', (t) => {
  const m = model();
  const first = m.publish('cam', ['r1'], T + 1);
  if (!first.ok) return t.fail();
  const old = first.node.nodeId;
  const other = old === 'o1' ? 'o2' : 'o1';
  t.is(m.heartbeat(old, { ready: true, metrics: {}, streams: publishing('cam') }, T + 2)?.drop, undefined);
  t.like(m.binding('cam'), { origin: old, state: 'LIVE' });
  m.applyNodeEvent(old, { type: 'fault', reason: 'test' }, T + 3);
  t.like(m.publish('cam', ['r1'], T + 4), { ok: true, node: { nodeId: other } });
  // The old origin comes back still carrying its publisher: the stream is not followed there.
  const back = m.heartbeat(old, { ready: true, metrics: {}, streams: publishing('cam') }, T + 5);
  t.deepEqual(back?.drop, { at: T + 5, streams: ['cam'] });
  t.like(m.binding('cam'), { origin: other });
  t.is(m.heartbeat(other, { ready: true, metrics: {}, streams: publishing('cam') }, T + 6)?.drop, undefined);
});

test('an ended stream is unbound at once, and its origin drops the publisher at its next heartbeat', (t) => {
  const m = model();
  const r = m.publish('cam', ['r1'], T + 1);
  if (!r.ok) return t.fail();
  m.heartbeat(r.node.nodeId, { ready: true, metrics: {}, streams: publishing('cam') }, T + 2);
  m.takeEffects();
  t.true(m.endStream('cam').ok);
  t.deepEqual(
    m.takeEffects().events.map((e) => e.type),
    ['stream.unbound'],
  );
  t.deepEqual(m.heartbeat(r.node.nodeId, { ready: true, metrics: {}, streams: publishing('cam') }, T + 3)?.drop?.streams, ['cam']);
  t.like(m.endStream('cam'), { ok: false, code: 'STREAM_NOT_FOUND' });
});

test("renditions a transcoder pushes to its stream's origin, and the stream at the transcoder, are never dropped", (t) => {
  const m = model();
  const r = { level: 1, videoBR: 1_000_000, videoWidth: 640, videoHeight: 360, videoFPS: 30, audioBR: 64_000 };
  m.putProvision({ streamName: 'show', region: 'r1', streams: [{ ...r, name: 'show_lo' }] }, 'create', T);
  const tr = m.transcode('show', ['r1'], T + 1);
  t.like(tr, { ok: true, node: { nodeId: 't1' } });
  t.is(m.heartbeat('t1', { ready: true, metrics: {}, streams: publishing('show') }, T + 2)?.drop, undefined);
  const origin = m.binding('show')!.origin;
  t.is(m.heartbeat(origin, { ready: true, metrics: {}, streams: publishing('show_lo') }, T + 3)?.drop, undefined);
  const other = origin === 'o1' ? 'o2' : 'o1';
  t.deepEqual(m.heartbeat(other, { ready: true, metrics: {}, streams: publishing('show_lo') }, T + 4)?.drop?.streams, ['show_lo']);
});

test('whatever origins list, a stream is only ever bound where a lookup put it, and every other listing is dropped', (t) => {
  const op = fc.oneof(
    fc.record({ op: fc.constant('publish' as const), stream: fc.integer({ min: 0, max: 3 }) }),
    fc.record({ op: fc.constant('list' as const), origin: fc.constantFrom('o1', 'o2'), streams: fc.uniqueArray(fc.integer({ min: 0, max: 3 }), { maxLength: 4 }) }),
    fc.record({ op: fc.constant('fault' as const), origin: fc.constantFrom('o1', 'o2') }),
    fc.record({ op: fc.constant('end' as const), stream: fc.integer({ min: 0, max: 3 }) }),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
      const m = model();
      const lookedUp = new Map<string, string>();
      let now = T;
      for (const o of ops) {
        now += 10;
        if (o.op === 'publish') {
          const r = m.publish(`s${o.stream}`, ['r1'], now);
          if (r.ok) lookedUp.set(`s${o.stream}`, r.node.nodeId);
        } else if (o.op === 'fault') m.applyNodeEvent(o.origin, { type: 'fault', reason: 'test' }, now);
        else if (o.op === 'end') {
          m.endStream(`s${o.stream}`);
          lookedUp.delete(`s${o.stream}`);
        } else {
          const names = o.streams.map((i) => `s${i}`);
          const reply = m.heartbeat(o.origin, { ready: true, metrics: {}, streams: publishing(...names) }, now);
          const dropped = new Set(reply?.drop?.streams ?? []);
          for (const name of names) if (dropped.has(name) !== (lookedUp.get(name) !== o.origin)) return false;
        }
        for (const [stream, origin] of lookedUp) if (m.binding(stream) && m.binding(stream)!.origin !== origin) return false;
      }
      return true;
    }),
  );
  t.pass();
});
