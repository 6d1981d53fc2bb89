// A small file system of its own for a test of a full or read-only disk (tmpfs: needs root, as the
// suite runs here), unmounted and removed at teardown.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';

/** Mounts a tmpfs with `options` (such as `size=40m` or `size=8m,ro`) and answers where. */
export function tmpfs(t: ExecutionContext, options: string, prefix = 'switchyard-tmpfs-'): string {
  const mount = mkdtempSync(join(tmpdir(), prefix));
  execFileSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', mount]);
  t.teardown(() => {
    try {
      execFileSync('umount', ['-l', mount]);
    } catch {
      /* already gone */
    }
    rmSync(mount, { recursive: true, force: true });
  });
  return mount;
}
