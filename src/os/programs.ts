// Where a program is: on PATH, or in the sbin directories (where Debian puts nginx, and which a
// non-root PATH often lacks).
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

const SBIN = ['/usr/sbin', '/usr/local/sbin', '/sbin'];

/** The path of an executable `name`, or null when it is nowhere to be found. */
export function findProgram(name: string, env: NodeJS.ProcessEnv = process.env): string | null {
  for (const dir of [...(env.PATH ?? '').split(delimiter), ...SBIN].filter(Boolean)) {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      /* not here */
    }
  }
  return null;
}
