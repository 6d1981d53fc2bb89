// Refuses writes before the disk refuses them. When a commit fails for lack of space, lmdb-js can
// corrupt its own memory and abort the whole process (seen here with lmdb 3.5: "corrupted size vs.
// prev_size", SIGABRT, with two threads writing to a full tmpfs). So writes stop while the data
// directory's device has less than `minFree` bytes, or the directory cannot be written (a
// read-only remount). Free space is asked before every write (statfs costs ~0.6 µs); the write
// probe runs at most once a second while healthy. Writes resume by themselves once there is room.
import { rmSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StoreUnavailable } from './failures.js';

export class DiskGuard {
  private probedAt = -Infinity;
  private problem: string | null = null;

  constructor(
    private readonly dir: string,
    private readonly minFree: number,
    private readonly probeEveryMs = 1000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Throws StoreUnavailable while writing would be unsafe. */
  check(): void {
    this.problem = this.space();
    if (!this.problem) {
      const now = this.now();
      if (now - this.probedAt >= this.probeEveryMs) {
        this.problem = this.writable();
        // While refusing, probe again on the next write, so writes resume as soon as they can.
        this.probedAt = this.problem ? -Infinity : now;
      }
    }
    if (this.problem) throw new StoreUnavailable(new Error(this.problem));
  }

  private space(): string | null {
    try {
      const s = statfsSync(this.dir);
      const free = s.bavail * s.bsize;
      if (free < this.minFree) return `no space left on the device: ${Math.floor(free / 2 ** 20)} MiB free, below the reserve of ${Math.floor(this.minFree / 2 ** 20)} MiB`;
      return null;
    } catch (err) {
      return failure(err);
    }
  }

  private writable(): string | null {
    try {
      const file = join(this.dir, '.write-probe');
      writeFileSync(file, '1', { mode: 0o600 });
      rmSync(file, { force: true });
      return null;
    } catch (err) {
      return failure(err);
    }
  }
}

function failure(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'EROFS') return 'the file system is read-only';
  if (code === 'ENOSPC') return 'no space left on the device';
  return `the data directory cannot be written: ${code ?? (err as Error).message}`;
}
