// backup: a consistent copy of the data directory's LMDB file. LMDB's own copy (mdb_env_copy2,
// through lmdb-js: the file's format is lmdb-js's, which Debian's mdb_copy cannot read) inside one
// read transaction, so the copy is one committed state. Not while a service holds the directory:
// opening the environment from a second process while the service commits can leave lmdb-js's
// writer spinning for ever (docs/operations.md). Restore: docs/operations.md.
import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { dataDirHolder } from '../../store/lock.js';
import { CliError, EXIT, usage } from '../api.js';
import type { Command } from '../command.js';
import { out } from '../table.js';

const backup: Command = {
  name: 'backup',
  summary: "copy the service's database (LMDB) to FILE, consistent, with the service stopped",
  args: ['FILE'],
  options: {
    'data-dir': { type: 'string', short: 'd', value: 'DIR', description: "the service's data directory (default: SWITCHYARD_DATA_DIR, else ./data)" },
  },
  details: [
    "Runs on the service's machine, as a user that can read the data directory, with the service stopped",
    '(it refuses while one runs there: exit code 1). FILE must not exist;',
    'it is written 0600. It holds everything durable: node groups, nodes, bindings, provisions,',
    'users, the signing key and the event log. With --json: {source, destination, bytes}.',
  ].join('\n'),
  async run(ctx, { values, positionals }) {
    const dir = resolve((values['data-dir'] as string | undefined) ?? (ctx.env.SWITCHYARD_DATA_DIR || 'data'));
    const source = join(dir, 'switchyard.mdb');
    const destination = resolve(positionals[0]!);
    if (!existsSync(source)) throw new CliError(`no Switchyard database in ${dir} (switchyard.mdb): --data-dir says where it is`, EXIT.failed);
    if (existsSync(destination)) throw usage(`${destination} exists: give a new file`);
    const running = dataDirHolder(dir);
    if (running !== null) {
      throw new CliError(
        `the service (pid ${running}) is running on ${dir}: stop it first (systemctl stop switchyard). A copy opened beside a running service can wedge its writes (docs/operations.md)`,
        EXIT.failed,
      );
    }
    process.umask(0o077);
    const { open } = await import('lmdb');
    const root = open({ path: source, maxDbs: 16, readOnly: true });
    try {
      await root.backup(destination, true);
    } catch (err) {
      throw new CliError(`backup of ${source} to ${destination} failed: ${(err as Error).message}`, EXIT.failed);
    } finally {
      await root.close();
    }
    const bytes = statSync(destination).size;
    ctx.show({ source, destination, bytes }, () => out(`${source} → ${destination} (${Math.round(bytes / 1024)} KiB)`));
  },
};

export const backupCommands = [backup];
