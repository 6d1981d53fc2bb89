// Node group, region and node names (src/domain/vocabulary.ts): whatever a name is, it is a path
// segment that does not climb or hide and, in cluster mode, a run of NATS subject tokens (a name
// with a dot at its end or two in a row made `sy.wal.g.`, which NATS refuses).
import test from 'ava';
import fc from 'fast-check';
import { isName, NAME_MAX } from '../../src/domain/vocabulary.js';

test('every name is 1–32 characters whose dot-separated parts are never empty; everything else is refused', (t) => {
  fc.assert(
    fc.property(fc.string({ unit: fc.constantFrom(...'ab9_-.'.split('')), maxLength: 40 }), (s) => {
      const parts = s.split('.');
      const expected = s.length >= 1 && s.length <= NAME_MAX && parts.every((p) => p.length > 0);
      return isName(s) === expected;
    }),
  );
  for (const bad of ['g.', '.g', 'a..b', '.', '..', '', 'a'.repeat(33), 'a/b', 'a b']) t.false(isName(bad), bad);
  for (const good of ['g', 'eu.west', 'a.b.c', 'a'.repeat(32), 'x_-1']) t.true(isName(good), good);
});
