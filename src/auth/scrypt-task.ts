// A piscina task: scrypt off the main thread and off libuv's small shared pool.
import { scryptSync, timingSafeEqual, randomBytes } from 'node:crypto';

export interface HashTask {
  op: 'hash';
  password: string;
}
export interface VerifyTask {
  op: 'verify';
  password: string;
  encoded: string;
}

/** N=2^15, r=8, p=1: about 32 MiB and tens of milliseconds per hash (OWASP's scrypt floor is 2^17·8 bytes of work per second of attack). */
const N = 32768;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;
const maxmem = 128 * N * R * 2;

export function hash(password: string): string {
  const salt = randomBytes(16);
  const key = scryptSync(password.normalize('NFKC'), salt, KEY_LENGTH, { N, r: R, p: P, maxmem });
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

export function verify(password: string, encoded: string): boolean {
  const parts = encoded.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [n, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  if (![n, r, p].every(Number.isSafeInteger) || n < 2 || n > 2 ** 20 || r < 1 || r > 32 || p < 1 || p > 16) return false;
  const salt = Buffer.from(parts[4]!, 'base64url');
  const expected = Buffer.from(parts[5]!, 'base64url');
  if (expected.length < 16) return false;
  const key = scryptSync(password.normalize('NFKC'), salt, expected.length, { N: n, r, p, maxmem: 128 * n * r * 2 + 1024 });
  return timingSafeEqual(key, expected);
}

export default function run(task: HashTask | VerifyTask): string | boolean {
  return task.op === 'hash' ? hash(task.password) : verify(task.password, task.encoded);
}
