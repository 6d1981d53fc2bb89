// What a write's answer rests on: its own commit, never a later one's. A commit is made to fail
// on demand (a file-size limit on a child process: EFBIG, reported by LMDB as a failed commit).
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import test from 'ava';
import { projectPath } from '../../src/paths.js';
import { tempDir } from '../helpers/service.js';

const LIMIT = 4 * 2 ** 20;

function child(scenario: 'durable' | 'fence', durability: 'commit' | 'flush'): Promise<Record<string, unknown>> {
  const dir = tempDir('switchyard-fsize-');
  const script = projectPath('dist', 'test', 'reliability', 'store-child.js');
  return new Promise((resolve, reject) =>
    execFile('sh', ['-c', `trap '' XFSZ; exec prlimit --fsize=${LIMIT}:${LIMIT} "$0" "$@"`, process.execPath, script, scenario, dir, durability], { timeout: 60_000 }, (err, stdout, stderr) => {
      rmSync(dir, { recursive: true, force: true });
      if (err) reject(new Error(`${err.message}\n${stderr}`));
      else resolve(JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>);
    }),
  );
}

for (const durability of ['commit', 'flush'] as const) {
  test(`durable() after a committed write resolves even when the next commit fails (${durability}): no 503 for a stored write`, async (t) => {
    const r = await child('durable', durability);
    t.like(r, { mine: 'small', laterStored: false });
    t.regex(r.later as string, /^rejected/, 'the next commit did fail');
    // Users.changePassword, the node-group registry and the old actor all answered 503 "nothing
    // was changed" when this rejected, for a write that was stored.
    t.is(r.durable, 'resolved undefined');
  });
}

test('a fenced commit lands only on the head it follows: one after a failed commit, or on a stale head, writes nothing', async (t) => {
  const r = await child('fence', 'commit');
  t.regex(r.first as string, /^rejected/);
  t.is(r.second, 'resolved false', 'it followed a commit that failed');
  t.is(r.stale, 'resolved false');
  t.is(r.headAfterFailure, r.headBefore);
  t.is(r.next, 'resolved true');
  t.is(r.headAtEnd, (r.headBefore as number) + 1);
  t.deepEqual(r.stored, ['next']);
});
