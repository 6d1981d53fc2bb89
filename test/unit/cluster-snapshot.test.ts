// Snapshots and compaction of a node group's log (src/policy/cluster/snapshot.ts) on a simulated
// stream and bucket: owners of successive epochs (the earlier ones stale, carrying on as if they
// still owned the group), a reader following the log, and every step of each interleaved by
// fast-check's scheduler. What the mechanism (src/cluster/snapshots.ts, replica.ts, wal.ts) does is
// reproduced step for step: a new owner catches up (the real `catchUp`), claims the manifest at the
// tail it reached, appends its epoch record by compare-and-set on that tail; an owner snapshots its
// local copy at what it applied, writes the body, publishes by compare-and-set on the manifest it
// read, then purges. Owners are told apart by their epochs; which of them is stale is the log's to
// say: the owner of its latest epoch record.
import test from 'ava';
import fc from 'fast-check';
import { catchUp, claim, due, follows, Gap, publish, purgeBelow, stale, type Logged, type Manifest, type ReplicaPort, type SnapshotRef } from '../../src/policy/cluster/snapshot.js';

type Writes = Array<[key: string, value: number | null]>;
interface Entry {
  seq: number;
  p: number | undefined;
  epoch: number;
  kind: 'w' | 'epoch';
  w: Writes;
}

/** The stream (one subject of interest among others), the manifest bucket and the snapshot bodies. */
class World {
  /** The stream's sequence: every subject's messages count (other groups' appends are noise). */
  seq = 0;
  /** The group's subject as kept (purges remove from here). */
  readonly kept = new Map<number, Entry>();
  /** Every entry ever appended: the truth a copy must match. */
  readonly appended: Entry[] = [];
  last = 0;
  manifest: { value: Manifest | null; revision: number } = { value: null, revision: 0 };
  readonly bodies = new Map<string, { first: number; records: Map<string, number> }>();
  /** What happened, in order: the invariants read it. */
  readonly history: Array<{ what: 'epoch' | 'append' | 'publish'; epoch: number }> = [];
  readonly violations: string[] = [];
  /** How often copies were taken from a snapshot, and logs purged: what the runs exercised. */
  readonly counts = { restores: 0, purges: 0 };

  constructor(readonly stripLinks = false) {}

  append(prev: number, epoch: number, kind: 'w' | 'epoch', w: Writes): number | 'conflict' {
    if (prev !== this.last) return 'conflict';
    const seq = ++this.seq;
    const e: Entry = { seq, p: this.stripLinks ? undefined : prev, epoch, kind, w };
    this.kept.set(seq, e);
    this.appended.push(e);
    this.last = seq;
    this.history.push({ what: kind === 'epoch' ? 'epoch' : 'append', epoch });
    return seq;
  }

  noise(): void {
    this.seq += 1;
  }

  /** The group's records after every entry up to `seq`. */
  truth(seq: number): Map<string, number> {
    const out = new Map<string, number>();
    for (const e of this.appended) {
      if (e.seq > seq) break;
      for (const [k, v] of e.w) v === null ? out.delete(k) : out.set(k, v);
    }
    return out;
  }

  purgeLog(below: number): void {
    const covered = this.manifest.value?.snap?.seq ?? 0;
    if (below > covered) this.violations.push(`a purge below ${below} while the published snapshot covers ${covered}`);
    this.counts.purges += 1;
    for (const seq of [...this.kept.keys()]) if (seq < below) this.kept.delete(seq);
  }

  purgeBodies(below: number): void {
    for (const [id, b] of this.bodies) if (b.first < below) this.bodies.delete(id);
  }
}

const same = (a: Map<string, number>, b: Map<string, number>) => a.size === b.size && [...a].every(([k, v]) => b.get(k) === v);

/** An instance's local copy of the group: records and how far it holds the log. */
class Copy {
  records = new Map<string, number>();
  applied = 0;
}

function portOf(w: World, copy: Copy, step: () => Promise<void>, readBatch: number, seen: (e: Entry[]) => void = () => {}): ReplicaPort<Entry> {
  const at = async <T>(f: () => T): Promise<T> => {
    await step();
    const r = f();
    await step();
    return r;
  };
  return {
    tail: () => at(() => w.last),
    applied: () => copy.applied,
    read: (from, to) =>
      at(() => {
        const out: Array<Logged<Entry>> = [];
        for (const e of [...w.kept.values()].sort((a, b) => a.seq - b.seq)) {
          if (e.seq <= from) continue;
          out.push({ seq: e.seq, p: e.p, entry: e });
          if (out.length >= readBatch || e.seq >= to) break;
        }
        return out;
      }),
    apply: (entries) =>
      at(() => {
        // The property itself: nothing is ever applied across a gap.
        let last = copy.applied;
        for (const l of entries) {
          if (!w.stripLinks && l.p !== last) w.violations.push(`applied ${l.seq} (after ${l.p}) to a copy at ${last}`);
          last = l.seq;
        }
        seen(entries.map((l) => l.entry));
        for (const l of entries) for (const [k, v] of l.entry.w) v === null ? copy.records.delete(k) : copy.records.set(k, v);
        copy.applied = last;
      }),
    snapshot: () => at(() => w.manifest.value?.snap ?? null),
    restore: async (snap) => {
      // Cleared first, then the body read: it may be purged in between (a newer snapshot published).
      await at(() => {
        copy.records = new Map();
        copy.applied = 0;
      });
      return at(() => {
        const body = w.bodies.get(snap.id);
        if (!body) return false;
        w.counts.restores += 1;
        copy.records = new Map(body.records);
        copy.applied = snap.seq;
        return true;
      });
    },
    reset: () =>
      at(() => {
        copy.records = new Map();
        copy.applied = 0;
      }),
  };
}

interface Plan {
  /** Per owner: its actions after the fence (true: snapshot, false: append). */
  owners: boolean[][];
  /** Steps each owner waits before it starts (the later ones take over an older log), then the reader. */
  delays: number[];
  /** Steps the reader waits between its rounds. */
  pause: number;
  readBatch: number;
  noise: number;
  keys: number;
}

/** An owner at `epoch`: claim, catch up, fence, then its actions; stale owners carry on until the log or the manifest stops them. */
async function owner(w: World, epoch: number, actions: boolean[], step: () => Promise<void>, plan: Plan, o: { claim: boolean }): Promise<void> {
  for (let i = 0; i < (plan.delays[epoch - 1] ?? 0); i++) await step();
  const copy = new Copy();
  const at = async <T>(f: () => T): Promise<T> => {
    await step();
    const r = f();
    await step();
    return r;
  };
  const check = (what: string) => {
    if (!same(copy.records, w.truth(copy.applied))) w.violations.push(`epoch ${epoch} ${what}: its copy differs from the log at ${copy.applied}`);
  };
  const port = portOf(w, copy, step, plan.readBatch);
  // The manifest by compare-and-set on the revision read (snapshots.ts `update`).
  const cas = async (decide: (m: Manifest | null) => ReturnType<typeof claim>, written: () => void = () => {}): Promise<boolean> => {
    for (;;) {
      const read = await at(() => ({ ...w.manifest }));
      const d = decide(read.value);
      if (!d.ok) return false;
      if (d.next === null) return true;
      const next = d.next;
      const wrote = await at(() => {
        if (w.manifest.revision !== read.revision) return false;
        w.manifest = { value: next, revision: read.revision + 1 };
        written();
        return true;
      });
      if (wrote) return true;
    }
  };
  let record = 0;
  for (let attempt = 0; ; attempt++) {
    if (attempt > 5) return;
    await catchUp(port, { restore: true });
    check('caught up');
    const tail = copy.applied;
    // Claimed at the tail it reached, before its record follows it (refused: claimed beyond, catch up again).
    if (o.claim && !(await cas((m) => claim(m, tail)))) continue;
    const seq = await at(() => w.append(tail, epoch, 'epoch', []));
    if (seq === 'conflict') continue;
    record = seq;
    copy.applied = seq;
    break;
  }
  let tail = record;
  let n = 0;
  for (const snapshot of actions) {
    if (snapshot) {
      // The records as the copy holds them, at what it applied (one read transaction).
      const taken = await at(() => ({ seq: copy.applied, records: new Map(copy.records), manifest: w.manifest.value }));
      if (stale(taken.manifest, record)) return;
      if (taken.seq === 0 || (taken.manifest?.snap && taken.manifest.snap.seq >= taken.seq)) continue;
      const id = `${epoch}-${taken.seq}`;
      const first = await at(() => {
        for (let i = 0; i < plan.noise; i++) w.noise();
        const f = ++w.seq;
        w.bodies.set(id, { first: f, records: taken.records });
        return f;
      });
      const ref: SnapshotRef = { id, seq: taken.seq, epoch, first, chunks: 1, records: taken.records.size, bytes: 0, digest: '', at: 0 };
      const published = await cas(
        (m) => publish(m, ref, record),
        () => w.history.push({ what: 'publish', epoch }),
      );
      if (!published) continue;
      await at(() => w.purgeLog(purgeBelow(ref)));
      await at(() => w.purgeBodies(ref.first));
      continue;
    }
    const key = `k${(epoch * 7 + n++) % plan.keys}`;
    const value = n % 3 === 0 ? null : epoch * 1000 + n;
    const seq = await at(() => w.append(tail, epoch, 'w', [[key, value]]));
    if (seq === 'conflict') {
      // Taken over: reading back finds a later epoch's entries, or a gap (wal.ts `resync`).
      let foreign = false;
      try {
        await catchUp(
          portOf(w, copy, step, plan.readBatch, (es) => (foreign ||= es.some((e) => e.epoch !== epoch))),
          { restore: false },
        );
      } catch (err) {
        if (!(err instanceof Gap)) throw err;
        foreign = true;
      }
      if (!foreign) w.violations.push(`epoch ${epoch}: its append conflicted with nobody else's entries`);
      return;
    }
    tail = seq;
    // Applied locally after the log acknowledged it: a snapshot in between sees the copy one entry behind.
    await at(() => {
      for (const [k, v] of [[key, value] as [string, number | null]]) v === null ? copy.records.delete(k) : copy.records.set(k, v);
      copy.applied = seq;
    });
    check('appended');
    for (let i = 0; i < plan.noise; i++) await at(() => w.noise());
  }
}

/** A standby: catches up again and again from what it holds; its copy always matches the log. */
async function reader(w: World, rounds: number, step: () => Promise<void>, plan: Plan): Promise<void> {
  const copy = new Copy();
  const port = portOf(w, copy, step, plan.readBatch);
  for (let i = 0; i < (plan.delays.at(-1) ?? 0); i++) await step();
  for (let i = 0; i < rounds; i++) {
    for (let j = 0; j < plan.pause; j++) await step();
    try {
      await catchUp(port, { restore: true });
    } catch (err) {
      // Snapshots replaced faster than one could be read, five times: tried again next round.
      if (!/moved on/.test((err as Error).message)) throw err;
    }
    if (!same(copy.records, w.truth(copy.applied))) w.violations.push(`the reader's copy differs from the log at ${copy.applied}`);
  }
}

/** The order of events broke the fence: an append or a publication by an owner other than the one whose epoch record is the log's latest. */
function fenceBroken(w: World): string[] {
  const out: string[] = [];
  let latest = 0;
  for (const h of w.history) {
    if (h.what === 'epoch') latest = h.epoch;
    else if (h.epoch !== latest) out.push(`${h.what} by the owner of epoch ${h.epoch} after the record of epoch ${latest}`);
  }
  return out;
}

const plans = fc.record({
  owners: fc.array(
    fc.array(
      fc.integer({ min: 0, max: 9 }).map((n) => n < 3),
      { minLength: 2, maxLength: 14 },
    ),
    { minLength: 2, maxLength: 3 },
  ),
  delays: fc.array(fc.integer({ min: 0, max: 60 }), { minLength: 4, maxLength: 4 }),
  pause: fc.integer({ min: 0, max: 12 }),
  readBatch: fc.integer({ min: 1, max: 4 }),
  noise: fc.integer({ min: 0, max: 2 }),
  keys: fc.integer({ min: 2, max: 6 }),
});

async function run(s: fc.Scheduler, plan: Plan, o: { claim: boolean; stripLinks?: boolean }): Promise<World> {
  const w = new World(o.stripLinks);
  const step = () => s.schedule(Promise.resolve());
  const all = [...plan.owners.map((actions, i) => owner(w, i + 1, actions, step, plan, o)), reader(w, 4, step, plan)];
  await s.waitIdle();
  await Promise.all(all);
  return w;
}

interface Exercised {
  runs: number;
  restored: number;
  purged: number;
}

const property = (o: { claim: boolean; stripLinks?: boolean }, exercised: Exercised = { runs: 0, restored: 0, purged: 0 }) =>
  fc.asyncProperty(fc.scheduler(), plans, async (s, plan) => {
    const w = await run(s, plan, o);
    exercised.runs += 1;
    if (w.counts.restores > 0) exercised.restored += 1;
    if (w.counts.purges > 0) exercised.purged += 1;
    const broken = [...w.violations, ...fenceBroken(w)];
    if (broken.length > 0) throw new Error(broken.slice(0, 3).join('; '));
  });

test('owners of successive epochs and a reader, every step interleaved: no copy ever differs from the log, nothing is applied across a gap, only the owner of the latest epoch record appends or publishes, no purge passes the published snapshot', async (t) => {
  const exercised: Exercised = { runs: 0, restored: 0, purged: 0 };
  await fc.assert(property({ claim: true }, exercised), { numRuns: 300 });
  // Not a vacuous pass: most runs compact the log, and many make a copy start from a snapshot.
  t.true(exercised.purged > exercised.runs / 2, `${exercised.purged} of ${exercised.runs} runs purged the log`);
  t.true(exercised.restored > exercised.runs / 10, `${exercised.restored} of ${exercised.runs} runs restored a snapshot`);
});

test('the simulation finds a stale owner publishing after a later epoch record when owners do not claim the manifest before their record', async (t) => {
  const r = await fc.check(property({ claim: false }), { numRuns: 300 });
  t.true(r.failed, 'without the claim, a stale owner publishes after the new epoch record');
  t.regex(String((r.errorInstance as Error | null)?.message), /publish by the owner of epoch \d+ after the record of epoch/);
});

test('the simulation finds a copy applied across a gap when entries do not name the one before them', async (t) => {
  const r = await fc.check(property({ claim: true, stripLinks: true }), { numRuns: 300 });
  t.true(r.failed, 'without `p`, a reader behind a purge applies what follows it');
  t.regex(String((r.errorInstance as Error | null)?.message), /copy differs from the log/);
});

test('the manifest: a claim raises the fence to the tail a new owner reached; a publication by an owner whose record is at or below the fence, or behind the published snapshot, is refused; the purge stops at what is published', (t) => {
  const snap = (seq: number): SnapshotRef => ({ id: `s${seq}`, seq, epoch: 1, first: 1, chunks: 1, records: 0, bytes: 0, digest: '', at: 0 });
  t.deepEqual(claim(null, 30), { ok: true, next: { fence: 30, snap: null } });
  t.deepEqual(claim({ fence: 30, snap: null }, 30), { ok: true, next: null }, 'claimed at this tail already: nothing to write');
  t.like(claim({ fence: 40, snap: null }, 30), { ok: false, stale: false }, 'claimed beyond: catch up again');
  t.deepEqual(claim({ fence: 30, snap: snap(20) }, 45), { ok: true, next: { fence: 45, snap: snap(20) } }, 'the published snapshot stays');
  t.like(publish({ fence: 40, snap: null }, snap(38), 40), { ok: false, stale: true }, 'a record at the fence is the one a later owner caught up to');
  t.like(publish({ fence: 40, snap: null }, snap(38), 12), { ok: false, stale: true });
  t.like(publish({ fence: 40, snap: snap(50) }, snap(49), 41), { ok: false, stale: false });
  t.like(publish({ fence: 40, snap: snap(50) }, snap(50), 41), { ok: false, stale: false });
  t.deepEqual(publish({ fence: 40, snap: snap(50) }, snap(60), 41), { ok: true, next: { fence: 40, snap: snap(60) } });
  t.false(stale(null, 1));
  t.true(stale({ fence: 41, snap: null }, 41));
  t.is(purgeBelow(snap(12)), 12, 'the covered entry itself stays: the subject is never empty, the next append names it');
  t.true(follows(7, 7));
  t.false(follows(7, 9));
  t.true(follows(7, undefined), 'an entry from before snapshots existed');
  t.false(due({ entries: 99, ms: 10 }, { entries: 100, intervalMs: 1000 }));
  t.true(due({ entries: 100, ms: 10 }, { entries: 100, intervalMs: 1000 }));
  t.true(due({ entries: 1, ms: 1000 }, { entries: 100, intervalMs: 1000 }));
  t.false(due({ entries: 0, ms: 5000 }, { entries: 100, intervalMs: 1000 }), 'an idle group is not snapshotted again');
});

test('a copy ahead of the log (the group deleted and made again) is reset, then replayed from the start', async (t) => {
  const w = new World();
  w.append(0, 1, 'epoch', []);
  w.append(1, 1, 'w', [['a', 1]]);
  const copy = new Copy();
  copy.applied = 40;
  copy.records.set('old', 9);
  const r = await catchUp(
    portOf(w, copy, () => Promise.resolve(), 10),
    { restore: true },
  );
  t.deepEqual(r, { entries: 2, restored: 0, applied: 2 });
  t.deepEqual([...copy.records], [['a', 1]]);
});
