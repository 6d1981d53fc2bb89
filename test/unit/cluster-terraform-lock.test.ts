// Terraform state in cluster mode: the pure lock and fence rules (src/policy/cluster/terraform-lock.ts)
// and the store that applies them (src/cluster/terraform-state.ts) against a KV bucket held in
// memory, with owners that change and instances that act on what they last believed (a paused
// process has not noticed it lost the group). The real bucket and the real CLI: test/cluster/terraform*.
import { randomBytes } from 'node:crypto';
import test from 'ava';
import fc from 'fast-check';
import pino from 'pino';
import type { KV } from '@nats-io/kv';
import { decideLock, decideUnlock, decideWrite, type Asker, type LockRecord } from '../../src/policy/cluster/terraform-lock.js';
import { TerraformState } from '../../src/cluster/terraform-state.js';
import type { EventBody } from '../../src/domain/events.js';

const INSTANCES = ['i1', 'i2', 'i3'];
const lockArb: fc.Arbitrary<LockRecord | null> = fc.option(
  fc
    .record({ id: fc.constantFrom('a', 'b', 'c'), instance: fc.constantFrom(...INSTANCES), epoch: fc.integer({ min: 1, max: 6 }), released: fc.boolean() })
    .map(({ released, ...l }) => (released ? { ...l, released: true as const } : l)),
  { nil: null },
);
const askerArb: fc.Arbitrary<Asker> = fc.option(fc.record({ instance: fc.constantFrom(...INSTANCES), epoch: fc.integer({ min: 1, max: 6 }) }), { nil: null });

test('a write is accepted only from the serving instance, under its own lock at its own epoch', (t) => {
  fc.assert(
    fc.property(lockArb, askerArb, fc.option(fc.constantFrom('a', 'b', 'c'), { nil: undefined }), (lock, asker, id) => {
      const d = decideWrite(lock, asker, id);
      const own = !!asker && !!lock && !lock.released && lock.id === id && lock.instance === asker.instance && lock.epoch === asker.epoch;
      return d.ok === own;
    }),
  );
  t.pass();
});

test('a lock is never taken over a held one, never broken by an earlier epoch, never broken when it is the asker’s own', (t) => {
  fc.assert(
    fc.property(lockArb, askerArb, fc.constantFrom('a', 'b', 'c'), (lock, asker, id) => {
      const d = decideLock(lock, asker, id);
      if (!asker) return d.kind === 'refused';
      // Free: never taken, or released by an owner no later than the asker.
      if (lock?.released) return lock.epoch > asker.epoch ? d.kind === 'refused' : d.kind === 'take';
      if (d.kind === 'take') return lock === null;
      if (d.kind === 'break') return lock !== null && lock.epoch <= asker.epoch && !(lock.instance === asker.instance && lock.epoch === asker.epoch);
      if (d.kind === 'again') return lock?.id === id && lock.instance === asker.instance && lock.epoch === asker.epoch;
      if (d.kind === 'held') return lock?.instance === asker.instance && lock.epoch === asker.epoch && lock.id !== id;
      return lock !== null && lock.epoch > asker.epoch;
    }),
  );
  t.pass();
});

test('only the holder lets go of a lock; unlocking a free one is fine', (t) => {
  fc.assert(
    fc.property(lockArb, fc.constantFrom(...INSTANCES), fc.option(fc.constantFrom('a', 'b'), { nil: undefined }), (lock, instance, id) => {
      const d = decideUnlock(lock, instance, id);
      if (!lock || lock.released) return d.kind === 'gone';
      return (d.kind === 'release') === (lock.instance === instance && lock.id === id);
    }),
  );
  t.pass();
});

/** A KV bucket in memory: revisions from one sequence, compare-and-set as JetStream answers it. */
class MemoryKv {
  seq = 0;
  readonly keys = new Map<string, { value: Uint8Array; revision: number; op: 'PUT' | 'DEL' }>();
  /** Runs before the next compare-and-set on the state key: another instance's step in between. */
  beforeStateWrite: (() => Promise<void>) | null = null;

  private conflict(): never {
    throw new Error('wrong last sequence: 1');
  }
  async get(key: string) {
    const e = this.keys.get(key);
    if (!e) return null;
    return { key, value: e.value, revision: e.revision, operation: e.op, json: () => JSON.parse(new TextDecoder().decode(e.value)) };
  }
  async create(key: string, value: Uint8Array) {
    if (this.keys.get(key)?.op === 'PUT') this.conflict();
    this.keys.set(key, { value, revision: ++this.seq, op: 'PUT' });
    return this.seq;
  }
  async update(key: string, value: Uint8Array, revision: number) {
    if (key.startsWith('state.') && this.beforeStateWrite) {
      const step = this.beforeStateWrite;
      this.beforeStateWrite = null;
      await step();
    }
    if (this.keys.get(key)?.revision !== revision) this.conflict();
    this.keys.set(key, { value, revision: ++this.seq, op: 'PUT' });
    return this.seq;
  }
  async delete(key: string, opts: { previousSeq: number }) {
    if (this.keys.get(key)?.revision !== opts.previousSeq) this.conflict();
    this.keys.set(key, { value: new Uint8Array(), revision: ++this.seq, op: 'DEL' });
  }
  async purge(key: string) {
    this.keys.delete(key);
  }
}

const log = pino({ level: 'silent' });

function world() {
  const kv = new MemoryKv();
  /** What each instance believes it serves the group at (a stale one still believes its old epoch). */
  const belief = new Map<string, number | null>(INSTANCES.map((i) => [i, null]));
  const events: EventBody[] = [];
  const stores = new Map(
    INSTANCES.map((instance) => [
      instance,
      new TerraformState({ kv: kv as unknown as KV, instance, servingEpoch: () => belief.get(instance) ?? null, maxBytes: () => 1 << 20, emit: (e) => events.push(...e), log }),
    ]),
  );
  return { kv, belief, events, store: (i: string) => stores.get(i)! };
}

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array | null) => (b ? new TextDecoder().decode(b) : null);

test('a new owner breaks the old owner’s lock and says so; the old owner’s late write and unlock are refused', async (t) => {
  const w = world();
  w.belief.set('i1', 1);
  t.is((await w.store('i1').lock('g', { ID: 'L1' })).status, 200);
  t.is((await w.store('i1').write('g', 'L1', bytes('{"serial":1}'))).status, 200);
  // i1 pauses past its lease; i2 takes the group at epoch 2. i1 still believes it serves.
  w.belief.set('i2', 2);
  t.is((await w.store('i2').lock('g', { ID: 'L2' })).status, 200);
  t.true(w.events.some((e) => e.type === 'platform.progress' && e.phase === 'lock-broken' && /i1 \(epoch 1/.test(e.message ?? '')));
  t.is(text(await w.store('i2').read('g')), '{"serial":1}', 'the new owner sees what the old one stored');
  const late = await w.store('i1').write('g', 'L1', bytes('{"serial":99}'));
  t.is(late.status, 409);
  t.is(late.lock?.ID, 'L2', 'answered with the holder');
  t.is((await w.store('i1').unlock('g', { ID: 'L1' })).status, 409);
  t.is((await w.store('i1').lock('g', { ID: 'L3' })).status, 423, 'a later epoch holds it: refused, never broken back');
  t.is((await w.store('i2').write('g', 'L2', bytes('{"serial":2}'))).status, 200);
  t.is((await w.store('i2').unlock('g', { ID: 'L2' })).status, 200);
  t.is(text(await w.store('i3').read('g')), '{"serial":2}');
});

test('an old owner that passed its checks, then paused while the new owner broke its lock: its write fails', async (t) => {
  const w = world();
  w.belief.set('i1', 1);
  await w.store('i1').lock('g', { ID: 'L1' });
  t.is((await w.store('i1').write('g', 'L1', bytes('one'))).status, 200);
  w.kv.beforeStateWrite = async () => {
    // Between i1's check and its compare-and-set: i2 takes over and breaks the lock.
    w.belief.set('i2', 2);
    t.is((await w.store('i2').lock('g', { ID: 'L2' })).status, 200);
  };
  const r = await w.store('i1').write('g', 'L1', bytes('stale'));
  t.is(r.status, 409, r.message);
  t.is(text(await w.store('i2').read('g')), 'one');
  t.is((await w.store('i2').write('g', 'L2', bytes('two'))).status, 200);
});

test('the same lock asked again is granted (a retried request); another lock of the same owner waits; not serving: refused', async (t) => {
  const w = world();
  w.belief.set('i1', 4);
  t.is((await w.store('i1').lock('g', { ID: 'L1' })).status, 200);
  t.is((await w.store('i1').lock('g', { ID: 'L1' })).status, 200);
  const other = await w.store('i1').lock('g', { ID: 'L9' });
  t.is(other.status, 423);
  t.is(other.lock?.ID, 'L1');
  t.is((await w.store('i2').lock('g', { ID: 'L2' })).status, 423, 'i2 does not serve the group');
  t.is((await w.store('i2').write('g', 'L1', bytes('x'))).status, 409);
  t.is((await w.store('i1').write('g', undefined, bytes('x'))).status, 409, 'a write without the lock');
  t.is((await w.store('i1').unlock('g', { ID: 'L1' })).status, 200);
  t.is((await w.store('i1').unlock('g', { ID: 'L1' })).status, 200, 'already free');
});

test('a state too large for a NATS message is refused with a clear message', async (t) => {
  const w = world();
  const store = new TerraformState({ kv: w.kv as unknown as KV, instance: 'i1', servingEpoch: () => 1, maxBytes: () => 1000, emit: (e) => w.events.push(...e), log });
  await store.lock('g', { ID: 'L1' });
  const random = randomBytes(5000);
  const r = await store.write('g', 'L1', random);
  t.is(r.status, 413);
  t.regex(r.message ?? '', /max_payload/);
  t.true(w.events.some((e) => e.type === 'platform.error' && e.operation === 'state'));
  t.is((await store.write('g', 'L1', bytes(JSON.stringify({ resources: Array(2000).fill({ type: 'terraform_data' }) })))).status, 200, 'gzip makes room for a repetitive state');
});

/**
 * Random histories: owners change (epochs only grow), any instance acts on its possibly stale
 * belief. Whatever lands in the state comes from the holder of the latest lock taken, and a lock
 * taken at an epoch is never followed by one taken at an earlier epoch.
 */
test('a stale owner cannot take a lock its successor released (found by the property below: a released lock was a deleted key, free to anyone)', async (t) => {
  const w = world();
  w.belief.set('i1', 1);
  w.belief.set('i2', 2);
  t.is((await w.store('i2').lock('g', { ID: 'new' })).status, 200);
  t.is((await w.store('i2').unlock('g', { ID: 'new' })).status, 200);
  // i1 was paused past its lease and still believes it serves at epoch 1.
  t.not((await w.store('i1').lock('g', { ID: 'old' })).status, 200);
  t.not((await w.store('i1').write('g', 'old', bytes('stale'))).status, 200);
  t.is((await w.store('i2').lock('g', { ID: 'again' })).status, 200, 'the owner that released it takes it again');
});

test('random histories of takeovers and stale instances: every state write comes from the latest lock taken', async (t) => {
  const step = fc.oneof(
    fc.record({ kind: fc.constant('takeover' as const), to: fc.constantFrom(...INSTANCES), forget: fc.boolean() }),
    fc.record({ kind: fc.constantFrom('lock' as const, 'write' as const, 'unlock' as const), by: fc.constantFrom(...INSTANCES), id: fc.constantFrom('a', 'b') }),
  );
  await fc.assert(
    fc.asyncProperty(fc.array(step, { maxLength: 40 }), async (steps) => {
      const w = world();
      let epoch = 0;
      const locks: Array<{ instance: string; epoch: number; id: string }> = [];
      let n = 0;
      for (const s of steps) {
        if (s.kind === 'takeover') {
          epoch++;
          w.belief.set(s.to, epoch);
          // The previous owner notices (or, paused, does not).
          for (const i of INSTANCES) if (i !== s.to && s.forget) w.belief.set(i, null);
          continue;
        }
        const id = `${s.by}-${s.id}`;
        const store = w.store(s.by);
        if (s.kind === 'lock') {
          if ((await store.lock('g', { ID: id })).status === 200) {
            const e = w.belief.get(s.by)!;
            if (locks.length > 0 && locks.at(-1)!.epoch > e) return false;
            locks.push({ instance: s.by, epoch: e, id });
          }
        } else if (s.kind === 'write') {
          const r = await store.write('g', id, bytes(`${id}#${++n}`));
          const last = locks.at(-1);
          if (r.status === 200 && !(last && last.instance === s.by && last.id === id && last.epoch === w.belief.get(s.by))) return false;
        } else await store.unlock('g', { ID: id });
      }
      return true;
    }),
    { numRuns: 300 },
  );
  t.pass();
});
