// Where `switchyard login` keeps its token: $XDG_CONFIG_HOME/switchyard/token (else
// ~/.config/switchyard/token), a JSON file of mode 0600 in a directory of mode 0700, holding the
// service's URL with the token, so that a token is only ever sent to the service that issued it.
import { chmodSync, lstatSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { CliError, EXIT } from './api.js';

export interface Saved {
  url: string;
  user: string;
  token: string;
  /** ms since the epoch. */
  expiresAt: number;
}

export const DEFAULT_URL = 'http://127.0.0.1:5080';

export function tokenFile(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME?.startsWith('/') ? env.XDG_CONFIG_HOME : join(env.HOME || homedir(), '.config');
  return join(base, 'switchyard', 'token');
}

export function readSaved(file: string): Saved | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new CliError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, EXIT.failed);
  }
  const mode = lstatSync(file).mode & 0o777;
  if (mode & 0o077) throw new CliError(`${file} is readable by other users (mode ${mode.toString(8)}): remove it and log in again`, EXIT.unauthorised);
  try {
    const s = JSON.parse(text) as Saved;
    if (typeof s.url === 'string' && typeof s.token === 'string' && typeof s.expiresAt === 'number') return s;
  } catch {
    /* below */
  }
  throw new CliError(`${file} is not a token file of this program: remove it and log in again`, EXIT.unauthorised);
}

/** Written whole to a temporary file and renamed over the old one: never half a token, never readable by others. */
export function writeSaved(file: string, saved: Saved): void {
  const dir = dirname(file);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(saved)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

export function removeSaved(file: string): boolean {
  try {
    lstatSync(file);
  } catch {
    return false;
  }
  rmSync(file, { force: true });
  return true;
}

/** The service's URL: --url, else SWITCHYARD_URL, else the one logged in to, else the default. */
export function serviceUrl(flag: string | undefined, env: NodeJS.ProcessEnv, saved: Saved | null): string {
  const raw = flag ?? (env.SWITCHYARD_URL || undefined) ?? saved?.url ?? DEFAULT_URL;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new CliError(`--url / SWITCHYARD_URL = ${JSON.stringify(raw)}: expected an http:// or https:// URL such as ${DEFAULT_URL}`, EXIT.usage);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new CliError(`--url / SWITCHYARD_URL = ${JSON.stringify(raw)}: expected an http:// or https:// URL`, EXIT.usage);
  return `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
}
