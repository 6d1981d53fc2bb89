// One service per data directory: two would both manage the same local nodes. A pid file whose
// process is gone (after kill -9) is taken over.
import { openSync, readFileSync, rmSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { alive, cmdline } from '../os/process-group.js';

/** Another service holds the data directory: the start stops with this one line (src/main.ts). */
export class DataDirInUse extends Error {
  constructor(
    readonly dir: string,
    readonly pid: number,
  ) {
    super(`the data directory ${dir} is in use by another Switchyard (pid ${pid}); stop that one first, or give this one its own (SWITCHYARD_DATA_DIR)`);
    this.name = 'DataDirInUse';
  }
}

/** A live process that runs node: a pid reused by something else does not hold the lock. */
function holder(pid: number): boolean {
  return alive(pid) && (process.platform !== 'linux' || cmdline(pid).includes('node'));
}

/** The pid of the live service that holds the data directory, or null. */
export function dataDirHolder(dir: string): number | null {
  try {
    const pid = Number(readFileSync(join(dir, 'switchyard.pid'), 'utf8').trim());
    return Number.isSafeInteger(pid) && pid > 0 && holder(pid) ? pid : null;
  } catch {
    return null;
  }
}

export function lockDataDir(dir: string): () => void {
  const file = join(dir, 'switchyard.pid');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      return () => {
        try {
          if (readFileSync(file, 'utf8').trim() === String(process.pid)) rmSync(file);
        } catch {
          /* already gone */
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = dataDirHolder(dir);
      if (pid !== null && pid !== process.pid) throw new DataDirInUse(dir, pid);
      rmSync(file, { force: true });
    }
  }
  throw new Error(`cannot lock the data directory ${dir}`);
}
