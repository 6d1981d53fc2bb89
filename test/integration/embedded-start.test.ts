// A program that embeds the service (tests do; so may an operator's own) starts it, stops it and
// starts it again, or has its start refused, and then ends by itself: the actor threads a start
// begins with (actors/spare.ts) keep the process alive exactly while something waits for them.
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import test from 'ava';
import { projectPath } from '../../src/paths.js';
import { tempDir } from '../helpers/service.js';

/** Runs test/helpers/embedding-program.ts; the bound only ends a process that would never end. */
function run(mode: 'refused' | 'restarts', dataDir: string): Promise<{ code: number | null; signal: string | null; stdout: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [projectPath('dist', 'test', 'helpers', 'embedding-program.js'), mode, dataDir], { timeout: 60_000 }, (err, stdout) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, signal: err ? ((err as { signal?: string }).signal ?? null) : null, stdout }),
    );
  });
}

test('a start refused in-process leaves nothing that keeps the process alive', async (t) => {
  const dataDir = tempDir('switchyard-embedded-');
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const r = await run('refused', dataDir);
  t.regex(r.stdout, /^refused: ConfigError: nodeGroups\[0\]\.platform\.terraform\.variables\.node_binary/);
  t.like(r, { code: 0, signal: null }, 'it ended by itself');
});

test('started, stopped and started again with nothing else running: every start completes', async (t) => {
  const dataDir = tempDir('switchyard-embedded-');
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const r = await run('restarts', dataDir);
  // Node ends a program whose awaited work holds nothing alive with code 13, mid-start.
  t.is(r.stdout, 'round 1\nround 2\nround 3\n');
  t.like(r, { code: 0, signal: null });
});
