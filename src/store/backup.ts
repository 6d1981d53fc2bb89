// A backup taken by the running service itself (docs/operations.md, "Backups"): LMDB's own copy
// (mdb_env_copy2, compacting, through lmdb-js on a thread of libuv's pool) of the environment this
// process has open, inside one read transaction: one committed state, every write acknowledged
// before the copy's transaction began is in it, and writes go on meanwhile (a reader never blocks
// LMDB's writer). Never a second process opening the environment: that once left lmdb-js's writer
// spinning for ever (lmdb-js's overlapping sync waits for a transaction id that the other
// process's open had moved), which is why `switchyard backup` of a running service comes here.
//
// The copy is written into the data directory (private: 0700) as a hidden file, opened, unlinked
// at once (the open file keeps it until the answer ends, and a crash leaves nothing behind but a
// copy under way, removed by the next backup), and streamed. One backup at a time: a copy takes as
// much disk as the live data, and is refused when it would bring the device under the disk guard's
// reserve (the service's writes would stop).
import { chmodSync, readdirSync, rmSync, statfsSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { Store } from './store.js';

const PARTIAL = /^\.backup-[0-9a-f]+\.mdb$/;

export class BackupRefused extends Error {
  constructor(
    readonly reason: 'busy' | 'no-room',
    message: string,
  ) {
    super(message);
    this.name = 'BackupRefused';
  }
}

export interface TakenBackup {
  bytes: number;
  /** The copy's bytes; the disk it holds is freed once this closes. */
  stream: Readable;
}

export class Backups {
  private busy = false;

  constructor(
    private readonly store: Store,
    private readonly dataDir: string,
    private readonly minFree: number,
  ) {}

  /** A consistent copy of the environment, taken now and ready to be read. */
  async take(): Promise<TakenBackup> {
    if (this.busy) throw new BackupRefused('busy', 'a backup is under way; retry once it is done');
    this.busy = true;
    const path = join(this.dataDir, `.backup-${randomBytes(6).toString('hex')}.mdb`);
    try {
      this.removeLeftovers();
      this.checkRoom();
      await this.store.root.backup(path, true);
      chmodSync(path, 0o600);
      const file = await open(path, 'r');
      rmSync(path);
      const { size } = await file.stat();
      const stream = file.createReadStream();
      stream.once('close', () => (this.busy = false));
      return { bytes: size, stream };
    } catch (err) {
      this.busy = false;
      rmSync(path, { force: true });
      throw err;
    }
  }

  /** A copy at most the pages in use; it must leave the disk guard's reserve free. */
  private checkRoom(): void {
    const stats = this.store.root.getStats() as { pageSize: number; lastPageNumber: number };
    const need = (stats.lastPageNumber + 1) * stats.pageSize;
    const s = statfsSync(this.dataDir);
    const free = s.bavail * s.bsize;
    if (free - need < this.minFree) {
      throw new BackupRefused(
        'no-room',
        `a copy needs up to ${Math.ceil(need / 2 ** 20)} MiB, and ${Math.floor(free / 2 ** 20)} MiB are free: it would leave less than the reserve of ${Math.floor(this.minFree / 2 ** 20)} MiB (minFreeBytes), and the service's writes would stop. Free space, or back up with the service stopped to another device`,
      );
    }
  }

  /** Copies under way when a process died (none runs now: one at a time, one process per data directory). */
  private removeLeftovers(): void {
    for (const name of readdirSync(this.dataDir)) if (PARTIAL.test(name)) rmSync(join(this.dataDir, name), { force: true });
  }
}
