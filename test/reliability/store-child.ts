// Run by test/integration/store-durability.test.ts under a file-size limit (prlimit --fsize, with
// SIGXFSZ ignored): a write past the limit fails with EFBIG, a commit failure LMDB reports as
// such, on demand and without filling a disk. Prints what it saw as one JSON line.
import { openStore } from '../../src/store/store.js';

const [scenario, dir, durability] = process.argv.slice(2) as [string, string, 'commit' | 'flush'];
const store = openStore(dir, durability);
/** Larger than the limit the test sets: its commit fails. */
const big = () => Buffer.alloc(8 * 2 ** 20, 1);
const outcome = <T>(p: Promise<T>) =>
  p.then(
    (v) => `resolved ${String(v)}`,
    (e: Error) => `rejected: ${e.message}`,
  );
// lmdb-js's own promise for a failed commit (commitError) is nobody's to hold here.
process.on('unhandledRejection', () => {});

let out: Record<string, unknown>;
if (scenario === 'durable') {
  // A write commits; the next one (in the next batch) fails. The first is stored and durable:
  // durable() must say so, whatever happens to writes after it.
  await store.meta.put('mine', 'small');
  const later = store.meta.put('later', big());
  const durable = outcome(store.durable());
  out = { durable: await durable, later: await outcome(later), mine: store.meta.get('mine') ?? null, laterStored: store.meta.get('later') !== undefined };
} else {
  // Fenced commits of one group: one that fails; then one decided after it, which expected it to
  // land (handed over once it had failed: LMDB checks the fence when it commits, so this is the
  // case of a commit queued behind a failing one, made deterministic); one on a stale head.
  const head = store.headOf('g');
  const first = await outcome(store.write(() => void store.meta.put('first', big()), { group: 'g', head }).durable);
  const second = await outcome(store.write(() => void store.meta.put('second', 'small'), { group: 'g', head: head + 1 }).durable);
  const stale = await outcome(store.write(() => void store.meta.put('stale', 'small'), { group: 'g', head: head + 5 }).durable);
  const after = store.headOf('g');
  const next = await outcome(store.write(() => void store.meta.put('next', 'small'), { group: 'g', head: after }).durable);
  out = {
    first,
    second,
    stale,
    headBefore: head,
    headAfterFailure: after,
    next,
    headAtEnd: store.headOf('g'),
    stored: ['first', 'second', 'stale', 'next'].filter((k) => store.meta.get(k) !== undefined),
  };
}
// Not closed: after a failed commit lmdb-js's close() waits for a flush that never comes.
process.stdout.write(`${JSON.stringify(out)}\n`, () => process.exit(0));
