// Users (docs/security.md): the admin, and `app` users from the config. Only scrypt hashes are kept,
// in LMDB. A password the operator supplies (environment or config) is applied when it changes;
// a password changed through the API survives restarts as long as that supplied one stays the
// same. With no supplied password, one is generated at first start: that one is "initial".
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config/types.js';
import type { Store } from '../store/store.js';
import type { PasswordHasher } from './passwords.js';
import { stored, StoreUnavailable } from '../store/failures.js';

export interface UserRecord {
  username: string;
  role: 'admin' | 'app';
  hash: string;
  /** Credential version, carried in tokens as `ver`: a password change bumps it. */
  ver: number;
  /** A generated first password, not yet changed. */
  initial: boolean;
  /** The hash of the operator-supplied password last applied (env or config). */
  seed?: string;
}

const KEY = (name: string) => `user:${name}`;
export const INITIAL_PASSWORD_FILE = 'initial-admin-password';

/**
 * Cluster mode: where users are shared between instances (src/root/cluster.ts). Seeding and
 * password changes are decided against the shared record and written by compare-and-set: one
 * instance's generated password wins, and only that one is announced.
 */
export interface SharedUsers {
  get(username: string): Promise<UserRecord | undefined>;
  /** False if the record changed elsewhere since it was read. */
  put(user: UserRecord): Promise<boolean>;
}

export class Users {
  private readonly users = new Map<string, UserRecord>();
  private dummy: string | null = null;

  private constructor(
    private readonly store: Store,
    private readonly hasher: PasswordHasher,
    private readonly dataDir: string,
    private readonly shared?: SharedUsers,
  ) {}

  /**
   * `announce` takes the one line that shows a generated password: a plain line on stderr by
   * default, never the JSON log, whose lines are shipped and kept where anyone with log access
   * would read it.
   */
  static async open(
    store: Store,
    config: Config,
    hasher: PasswordHasher,
    log: Logger,
    announce: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
    shared?: SharedUsers,
  ): Promise<Users> {
    const users = new Users(store, hasher, config.dataDir, shared);
    await users.seed(config, log, announce);
    return users;
  }

  private async seed(config: Config, log: Logger, announce: (line: string) => void): Promise<void> {
    const wanted = new Map<string, { role: 'admin' | 'app'; plain?: string; hash?: string }>();
    wanted.set(config.auth.adminUser, {
      role: 'admin',
      ...(config.auth.adminPassword !== undefined ? { plain: config.auth.adminPassword } : {}),
      ...(config.auth.adminPasswordHash !== undefined ? { hash: config.auth.adminPasswordHash } : {}),
    });
    for (const u of config.auth.users) wanted.set(u.username, { role: u.role, hash: u.passwordHash });

    // Users no longer configured must not keep working.
    for (const { key } of this.store.meta.getRange({ start: 'user:', end: 'user;' })) {
      const name = (key as string).slice(5);
      if (!wanted.has(name)) await this.store.meta.remove(key);
    }

    for (const [username, want] of wanted) {
      const current = this.shared
        ? ((await this.shared.get(username)) ?? (this.store.meta.get(KEY(username)) as UserRecord | undefined))
        : (this.store.meta.get(KEY(username)) as UserRecord | undefined);
      let announcement: (() => void) | null = null;
      let next: UserRecord | undefined;
      if (want.plain !== undefined) {
        const stillSame = current?.seed !== undefined && (await this.hasher.verify(want.plain, current.seed));
        if (!stillSame) {
          const hash = await this.hasher.hash(want.plain);
          next = { username, role: want.role, hash, seed: hash, ver: (current?.ver ?? 0) + 1, initial: false };
        }
      } else if (want.hash !== undefined) {
        if (current?.seed !== want.hash) next = { username, role: want.role, hash: want.hash, seed: want.hash, ver: (current?.ver ?? 0) + 1, initial: false };
      } else if (!current) {
        const password = randomBytes(18).toString('base64url');
        next = { username, role: want.role, hash: await this.hasher.hash(password), ver: 1, initial: true };
        announcement = () => {
          writeFileSync(join(this.dataDir, INITIAL_PASSWORD_FILE), `${password}\n`, { mode: 0o600 });
          const file = join(this.dataDir, INITIAL_PASSWORD_FILE);
          announce(`switchyard: the generated password of '${username}' is ${password} (also in ${file} until you change it with POST /as/v1/auth/password)`);
          log.warn({ user: username, file }, 'generated the initial admin password: printed once on stderr and kept in the file named here until it is changed');
        };
      }
      if (current && next === undefined && current.role !== want.role) next = { ...current, role: want.role };
      if (next && this.shared && !(await this.shared.put(next))) {
        // Another instance seeded this user first (its generated password is the one announced).
        next = undefined;
        announcement = null;
      }
      if (next) {
        await this.store.meta.put(KEY(username), next);
        await this.store.durable();
        announcement?.();
      }
      const chosen = next ?? (this.shared ? await this.shared.get(username) : undefined) ?? current;
      if (chosen) this.set(chosen);
    }
    // A generated password that the environment or the config has since replaced: its file would
    // only mislead whoever reads it (the tour and the demo do).
    if (!this.pending) rmSync(join(this.dataDir, INITIAL_PASSWORD_FILE), { force: true });
  }

  /** Cluster mode: a user as another instance changed it (null: removed). */
  adopt(username: string, user: UserRecord | null): void {
    if (!user) {
      this.users.delete(username);
      this.pending = [...this.users.values()].some((u) => u.role === 'admin' && u.initial);
      return;
    }
    const mine = this.users.get(username);
    if (!mine || user.ver >= mine.ver) this.set(user);
  }

  get(username: string): UserRecord | undefined {
    return this.users.get(username);
  }

  /** An admin still has the generated first password (docs/security.md: then every token waits for its change). */
  initialPending(): boolean {
    return this.pending;
  }

  /** Asked on every request of a public bind: kept, not scanned, and set wherever a user changes. */
  private pending = false;

  private set(user: UserRecord): void {
    this.users.set(user.username, user);
    this.pending = [...this.users.values()].some((u) => u.role === 'admin' && u.initial);
  }

  /** The user, if the password is theirs. Unknown users cost the same time as known ones. */
  async check(username: string, password: string): Promise<UserRecord | null> {
    const user = this.users.get(username);
    if (!user) {
      this.dummy ??= await this.hasher.hash(randomBytes(16).toString('hex'));
      await this.hasher.verify(password, this.dummy);
      return null;
    }
    return (await this.hasher.verify(password, user.hash)) ? user : null;
  }

  /** Sets a new password; every token issued before stops working. */
  async changePassword(user: UserRecord, newPassword: string): Promise<UserRecord> {
    const next: UserRecord = { ...user, hash: await this.hasher.hash(newPassword), ver: user.ver + 1, initial: false };
    if (this.shared && !(await this.shared.put(next))) throw new StoreUnavailable(new Error('the password was changed on another instance meanwhile; nothing was changed here, log in again'));
    await stored(() => this.store.meta.put(KEY(user.username), next), this.store.guard);
    await stored(this.store.durable());
    this.set(next);
    if (user.initial) rmSync(join(this.dataDir, INITIAL_PASSWORD_FILE), { force: true });
    return next;
  }
}
