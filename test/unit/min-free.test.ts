// The disk guard's reserve cannot be configured away: below 16 MiB, a commit can meet a full disk,
// which lmdb-js can answer by aborting the process.
import { rmSync } from 'node:fs';
import test from 'ava';
import { ConfigError, parseConfig } from '../../src/config/load.js';
import { MIN_FREE_FLOOR } from '../../src/domain/disk.js';
import { openStore } from '../../src/store/store.js';
import { staticGroup, tempDir } from '../helpers/service.js';

const config = (minFreeBytes?: number) => parseConfig({ nodeGroups: [staticGroup()], ...(minFreeBytes === undefined ? {} : { minFreeBytes }) }, 'test', {});

test('minFreeBytes below 16 MiB is refused at start, naming the field and the floor', (t) => {
  t.is(MIN_FREE_FLOOR, 16 * 2 ** 20);
  for (const bad of [0, 1, MIN_FREE_FLOOR - 1]) {
    const err = t.throws(() => config(bad), { instanceOf: ConfigError });
    t.regex(err!.message, new RegExp(`minFreeBytes = ${bad}: must be >= ${MIN_FREE_FLOOR}`));
  }
  t.is(config(MIN_FREE_FLOOR).minFreeBytes, MIN_FREE_FLOOR);
  t.is(config().minFreeBytes, 64 * 2 ** 20, 'the default reserve');
});

test('the store itself refuses a reserve below the floor', (t) => {
  const dir = tempDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  t.throws(() => openStore(dir, 'commit', 0), { instanceOf: RangeError });
});
