// backup: a consistent copy of the service's database (LMDB), as a file a stopped service starts on
// (docs/operations.md, "Backups"). While a service runs on the data directory (or with --url, a
// service anywhere), the service takes the copy itself and streams it (GET /as/v1/admin/backup,
// src/store/backup.ts): opening the environment from a second process while the service commits
// can leave lmdb-js's writer spinning for ever, so this process never does. With the service
// stopped, LMDB's own copy (mdb_env_copy2 through lmdb-js: the file's format is lmdb-js's, which
// Debian's mdb_copy cannot read) inside one read transaction. Either way the copy is written to
// FILE.partial, checked (it opens as an LMDB environment), and renamed to FILE.
import { createWriteStream, existsSync, rmSync, statSync } from 'node:fs';
import { open as openFile, rename } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream } from 'node:stream/web';
import { dataDirHolder } from '../../store/lock.js';
import { CliError, EXIT, failureBody, refused, unreachable, usage } from '../api.js';
import type { Command } from '../command.js';
import type { Context } from '../context.js';
import { out } from '../table.js';

/** Opens FILE as an LMDB environment, read-only, and closes it: a copy cut short does not open. */
async function checkCopy(file: string): Promise<void> {
  const { open } = await import('lmdb');
  const hadLock = existsSync(`${file}-lock`);
  try {
    const root = open({ path: file, maxDbs: 16, readOnly: true });
    try {
      root.openDB({ name: 'groups' });
      root.getStats();
    } finally {
      await root.close();
    }
  } finally {
    if (!hadLock) rmSync(`${file}-lock`, { force: true });
  }
}

/** The running service's copy, streamed to `partial`. */
async function fromService(ctx: Context, partial: string): Promise<{ source: string; bytes: number }> {
  const url = `${ctx.url}/as/v1/admin/backup`;
  const token = ctx.token();
  let res: Response;
  try {
    // No timeout: a large database takes a while to copy before its first byte comes.
    res = await fetch(url, { headers: { authorization: `Bearer ${token}`, accept: 'application/octet-stream' } });
  } catch (err) {
    throw unreachable(ctx.url, err);
  }
  if (!res.ok || !res.body) throw refused('GET', '/as/v1/admin/backup', res.status, await failureBody(res), res.headers.get('retry-after'));
  const expected = Number(res.headers.get('content-length'));
  await pipeline(Readable.fromWeb(res.body as ReadableStream<Uint8Array>), createWriteStream(partial, { flags: 'wx', mode: 0o600 }));
  // On the disk before it is renamed: a crash after the rename must not leave a hole in the copy.
  const written = await openFile(partial, 'r+');
  try {
    await written.sync();
  } finally {
    await written.close();
  }
  const bytes = statSync(partial).size;
  if (Number.isFinite(expected) && bytes !== expected) throw new CliError(`the copy from ${ctx.url} ended after ${bytes} of ${expected} bytes; try again`, EXIT.failed);
  return { source: ctx.url, bytes };
}

/** The stopped service's environment, copied by LMDB to `partial`. */
async function fromDirectory(source: string, partial: string): Promise<{ source: string; bytes: number }> {
  const { open } = await import('lmdb');
  const root = open({ path: source, maxDbs: 16, readOnly: true });
  try {
    await root.backup(partial, true);
  } finally {
    await root.close();
  }
  return { source, bytes: statSync(partial).size };
}

const backup: Command = {
  name: 'backup',
  summary: "copy the service's database (LMDB) to FILE, consistent, whether the service runs or not",
  args: ['FILE'],
  options: {
    'data-dir': { type: 'string', short: 'd', value: 'DIR', description: "the service's data directory (default: SWITCHYARD_DATA_DIR, else ./data)" },
  },
  details: [
    'While a service runs on the data directory, it takes the copy itself and sends it',
    '(GET /as/v1/admin/backup: log in first, or set SWITCHYARD_TOKEN; --url if it is not at the',
    'default address); with --url, a service anywhere. With the service stopped, the copy is',
    'read from the data directory (run it as a user that can read it). Writes go on during the copy.',
    'FILE must not exist; it is written 0600, and holds everything durable: node groups, nodes,',
    'bindings, provisions, users, the signing key and the event log. Restore: docs/operations.md.',
    'With --json: {source, destination, bytes}.',
  ].join('\n'),
  async run(ctx, { values, positionals }) {
    const dir = resolve((values['data-dir'] as string | undefined) ?? (ctx.env.SWITCHYARD_DATA_DIR || 'data'));
    const source = join(dir, 'switchyard.mdb');
    const destination = resolve(positionals[0]!);
    if (existsSync(destination)) throw usage(`${destination} exists: give a new file`);
    const viaService = values.url !== undefined || (existsSync(dir) && dataDirHolder(dir) !== null);
    if (!viaService && !existsSync(source)) throw new CliError(`no Switchyard database in ${dir} (switchyard.mdb): --data-dir says where it is, or --url the service`, EXIT.failed);
    process.umask(0o077);
    const partial = `${destination}.partial`;
    rmSync(partial, { force: true });
    let copied: { source: string; bytes: number };
    try {
      copied = viaService ? await fromService(ctx, partial) : await fromDirectory(source, partial);
      await checkCopy(partial);
      await rename(partial, destination);
    } catch (err) {
      rmSync(partial, { force: true });
      if (err instanceof CliError) throw err;
      throw new CliError(`backup to ${destination} failed: ${(err as Error).message}`, EXIT.failed);
    }
    ctx.show({ source: copied.source, destination, bytes: copied.bytes }, () => out(`${copied.source} → ${destination} (${Math.round(copied.bytes / 1024)} KiB)`));
  },
};

export const backupCommands = [backup];
