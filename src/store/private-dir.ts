// The data directory is the service's alone (README, Security): it holds the token signing key,
// the scrypt hashes, node tokens in Terraform's variables and state, and node logs. Any local user
// who can read it can mint admin tokens. So the directory is 0700 and nothing in it is readable,
// writable or executable by group or others, whatever the umask it was made under; a directory
// made looser (an older version, a restore from a backup, an operator's chmod) is tightened at
// start, and the start says what it changed.
import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Permission bits of group and others: what "private" takes away. */
const SHARED = 0o077;

export interface Tightened {
  /** Entries whose mode lost group or other bits, relative to the directory. */
  changed: string[];
  /** Entries that could not be changed (owned by another user, say), with why. */
  failed: Array<{ path: string; error: string }>;
}

/**
 * Creates `dir` (0700) if needed and takes group and other bits off it and everything under it.
 * Owner bits are kept: a provider plugin Terraform keeps under the directory stays executable.
 * Symbolic links are not followed (their target is not ours to change).
 */
export function makePrivate(dir: string): Tightened {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const out: Tightened = { changed: [], failed: [] };
  const visit = (path: string, rel: string) => {
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(path);
    } catch {
      return; // removed while we walked
    }
    if (st.isSymbolicLink()) return;
    if ((st.mode & SHARED) !== 0) {
      try {
        chmodSync(path, st.mode & 0o7700 & ~SHARED);
        out.changed.push(rel || '.');
      } catch (err) {
        out.failed.push({ path: rel || '.', error: (err as NodeJS.ErrnoException).code ?? (err as Error).message });
      }
    }
    if (st.isDirectory()) {
      let names: string[];
      try {
        names = readdirSync(path);
      } catch {
        return;
      }
      for (const name of names) visit(join(path, name), rel ? `${rel}/${name}` : name);
    }
  };
  visit(dir, '');
  return out;
}

/** Takes group and other bits off the files the store made (LMDB creates them under the umask). */
export function keepPrivate(dir: string, names: readonly string[]): void {
  for (const name of names) {
    const path = join(dir, name);
    try {
      const st = lstatSync(path);
      if (!st.isSymbolicLink() && (st.mode & SHARED) !== 0) chmodSync(path, st.mode & 0o7700 & ~SHARED);
    } catch {
      /* not there (yet) */
    }
  }
}
