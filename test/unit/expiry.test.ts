import test from 'ava';
import fc from 'fast-check';
import { ExpiryBuckets } from '../../src/model/expiry.js';

test('an item comes back once, at the first look at or after the second it was last filed under, never before', (t) => {
  const ops = fc.array(
    fc.oneof(
      fc.record({ op: fc.constant('file' as const), item: fc.integer({ min: 0, max: 9 }), ahead: fc.integer({ min: 0, max: 20 }) }),
      fc.record({ op: fc.constant('look' as const), advance: fc.integer({ min: 0, max: 10 }) }),
    ),
    { maxLength: 80 },
  );
  fc.assert(
    fc.property(ops, (list) => {
      const buckets = new ExpiryBuckets<{ id: number; dueS: number }>();
      const items = Array.from({ length: 10 }, (_, id) => ({ id, dueS: -1 }));
      // The reference: the second each item was last filed under, while it is filed.
      const filed = new Map<number, number>();
      let now = 0;
      for (const o of list) {
        if (o.op === 'file') {
          buckets.file(items[o.item]!, now + o.ahead);
          filed.set(o.item, now + o.ahead);
        } else {
          now += o.advance;
          const due = buckets.due(now).map((i) => i.id);
          const expected = [...filed].filter(([, s]) => s <= now).map(([id]) => id);
          for (const id of expected) filed.delete(id);
          if (due.length !== new Set(due).size) return false;
          if (JSON.stringify([...due].sort()) !== JSON.stringify(expected.sort())) return false;
        }
      }
      return true;
    }),
  );
  t.pass();
});
