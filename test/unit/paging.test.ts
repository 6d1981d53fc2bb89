// A page after a cursor is what sorting everything and slicing would give, whatever the order
// the keys come in (the heap must not depend on it).
import test from 'ava';
import fc from 'fast-check';
import { pageKeys } from '../../src/domain/paging.js';

const sortedPage = (keys: string[], after: string | undefined, limit: number) =>
  [...new Set(keys)]
    .filter((k) => after === undefined || k > after)
    .sort()
    .slice(0, Math.max(0, limit));

test('a page is the limit smallest keys after the cursor, in order', (t) => {
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.oneof(fc.string({ maxLength: 6 }), fc.string({ unit: 'grapheme', maxLength: 4 }), fc.stringMatching(/^[a-z0-9]{1,3}$/)), { maxLength: 300 }),
      fc.option(fc.string({ maxLength: 4 }), { nil: undefined }),
      fc.integer({ min: -1, max: 320 }),
      (keys, after, limit) => {
        t.deepEqual(pageKeys(keys, after, limit), sortedPage(keys, after, limit));
        t.deepEqual(pageKeys([...keys].reverse(), after, limit), sortedPage(keys, after, limit));
      },
    ),
  );
});

test('walking the pages visits every key once, in order', (t) => {
  fc.assert(
    fc.property(fc.uniqueArray(fc.stringMatching(/^[a-z]{1,4}$/), { maxLength: 200 }), fc.integer({ min: 1, max: 30 }), (keys, limit) => {
      const seen: string[] = [];
      let after: string | undefined;
      for (;;) {
        const page = pageKeys(keys, after, limit);
        seen.push(...page);
        if (page.length < limit) break;
        after = page.at(-1);
      }
      t.deepEqual(seen, [...keys].sort());
    }),
  );
});
