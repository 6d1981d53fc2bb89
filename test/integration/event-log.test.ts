import { rmSync } from 'node:fs';
import test from 'ava';
import { EventLog } from '../../src/events/log.js';
import { openStore } from '../../src/store/store.js';
import { tempDir } from '../helpers/service.js';

const body = (i: number) => ({ type: 'scaling.request' as const, group: 'g', role: 'edge' as const, region: `r${i}`, reason: 'test' });

test('an event can be replayed the moment it is appended, before LMDB has committed it', async (t) => {
  const dir = tempDir();
  const store = openStore(dir);
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const log = new EventLog(store);
  log.append([body(1), body(2)]);
  t.deepEqual(log.since(0).map((e) => e.seq), [1, 2]);
  t.deepEqual(log.since(1).map((e) => e.seq), [2]);
});

test('after a restart, earlier events come from LMDB and numbering goes on', async (t) => {
  const dir = tempDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let store = openStore(dir);
  new EventLog(store).append([body(1), body(2), body(3)]);
  await store.root.committed;
  await store.close();
  store = openStore(dir);
  t.teardown(() => store.close());
  const log = new EventLog(store);
  log.append([body(4)]);
  t.deepEqual(log.since(1).map((e) => e.seq), [2, 3, 4]);
  t.deepEqual(log.since(0, 2).map((e) => e.seq), [1, 2]);
});

test('the log keeps at most `keep` events', async (t) => {
  const dir = tempDir();
  const store = openStore(dir);
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const log = new EventLog(store, 100);
  for (let i = 0; i < 30; i++) log.append(Array.from({ length: 20 }, (_, j) => body(i * 20 + j)));
  t.is(log.since(0, 10_000).length, 100);
  t.is(log.since(0, 10_000)[0]!.seq, 501);
});
