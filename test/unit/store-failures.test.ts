import test from 'ava';
import { describe } from '../../src/store/failures.js';

test("why a write failed is told in general words, never the store's own text with its file names", (t) => {
  t.is(describe(Object.assign(new Error('ENOSPC: No space left on device'), { code: 28 })), 'no space left on the device');
  t.is(describe(new Error("EROFS: read-only file system, open '/var/lib/switchyard/data.mdb'")), 'the file system is read-only');
  t.is(describe(Object.assign(new Error("EACCES: permission denied, open '/var/lib/switchyard/data.mdb'"), { code: 'EACCES' })), 'permission denied on the data directory');
  t.is(describe(new Error('MDB_MAP_FULL: Environment mapsize limit reached')), 'the data store has reached its map size');
  const odd = describe(new Error('lmdb: something unexpected at /var/lib/switchyard/data.mdb-lock'));
  t.is(odd, 'the data store failed; the log has the details');
  t.false(odd.includes('/'));
});
