// When the disk is full or read-only, LMDB commits fail. The write that failed reports to its
// caller; but lmdb-js also rejects promises of its own that nobody holds (the commit's
// `commitError`, its write of shared msgpack structures), and Node would end the process for
// them. Those, and only those, are logged and survived here. Every other unhandled rejection
// still ends the process, as Node intends.

export class StoreUnavailable extends Error {
  constructor(override readonly cause: unknown) {
    super(`the data store refused the write: ${describe(cause)}`);
    this.name = 'StoreUnavailable';
  }
}

/** Whether an error is lmdb's report of a failed commit. */
export function isCommitFailure(err: unknown): boolean {
  const e = err as { commitError?: unknown; message?: unknown } | null;
  return !!e && (e.commitError !== undefined || (typeof e.message === 'string' && e.message.startsWith('Commit failed')));
}

/**
 * Why a write failed, in words that reach clients (a 503's detail): the cause, never the library's
 * own text, which can name files of the data directory. The full error goes to the log.
 */
export function describe(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'number' ? ({ 28: 'ENOSPC', 30: 'EROFS', 13: 'EACCES', 5: 'EIO' } as Record<number, string>)[e.code] : typeof e?.code === 'string' ? e.code : undefined;
  const text = typeof e?.message === 'string' ? e.message : String(err);
  if (/No space left/i.test(text) || code === 'ENOSPC') return 'no space left on the device';
  if (/read-only/i.test(text) || code === 'EROFS') return 'the file system is read-only';
  if (/permission denied/i.test(text) || code === 'EACCES' || code === 'EPERM') return 'permission denied on the data directory';
  if (/MDB_MAP_FULL/.test(text)) return 'the data store has reached its map size';
  if (/I\/O error/i.test(text) || code === 'EIO') return 'an I/O error on the data directory';
  // Cluster mode: the replicated log (src/cluster/wal.ts) did not take the write.
  if (/JetStream|NATS|no responders|timeout|not reachable/i.test(text) || code === 'TIMEOUT') return 'the replicated log (NATS JetStream) did not confirm the write';
  return 'the data store failed; the log has the details';
}

/** Awaits a write; a failed commit becomes StoreUnavailable, with lmdb's own promise handled. */
export async function stored<T>(write: Promise<T> | (() => Promise<T>), guard?: { check(): void }): Promise<T> {
  guard?.check();
  if (typeof write === 'function') write = write();
  try {
    return await write;
  } catch (err) {
    const inner = (err as { commitError?: Promise<unknown> }).commitError;
    if (inner)
      throw new StoreUnavailable(
        await inner.then(
          () => err,
          (e: unknown) => e,
        ),
      );
    throw new StoreUnavailable(err);
  }
}

let installed = false;

/** Once per thread: survive lmdb's unheld commit failures, and say so. */
export function surviveCommitFailures(log: (message: string) => void): void {
  if (installed) return;
  installed = true;
  process.on('unhandledRejection', (reason) => {
    if (isCommitFailure(reason)) {
      (reason as { commitError?: Promise<unknown> }).commitError?.catch(() => {});
      log(`a data store commit failed: ${describe(reason)}`);
      return;
    }
    throw reason;
  });
}
