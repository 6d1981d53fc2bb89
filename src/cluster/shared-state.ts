// What every instance of a cluster shares besides node-group state (docs/cluster.md), in the
// `sy_meta` KV bucket, each key written by compare-and-set and followed by every instance through
// a watch: the token signing key (the first instance to start creates it; exactly one create
// wins), users (a password changed on one instance retires old tokens on all, as soon as the
// watch brings the new credential version), node token generations (a revocation anywhere holds
// everywhere) and node-group definitions.
import type { KV, KvEntry } from '@nats-io/kv';
import type { Logger } from 'pino';
import type { UserRecord } from '../auth/users.js';
import type { StoredGroup } from '../store/store.js';
import { isConflict, retrying } from './nats.js';
import { GuardedWatch } from './watch.js';

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

/** A key for a name of any characters (user names may hold '@', which keys may not): base64url. */
export const keyOf = (prefix: 'user' | 'nodegen' | 'group' | 'hook' | 'hookstate', name: string) => `${prefix}.${Buffer.from(name).toString('base64url')}`;
export const nameOf = (key: string) => Buffer.from(key.slice(key.indexOf('.') + 1), 'base64url').toString();

export interface Watchers {
  user?(user: UserRecord | null, name: string): void;
  nodeGeneration?(key: string, value: { gen: number; at: number } | null): void;
  group?(name: string, value: StoredGroup | null): void;
  /** Webhook endpoints made through the API, and every endpoint's delivery state (webhook-keeping.ts). */
  webhook?(id: string, value: unknown): void;
  webhookState?(id: string, value: unknown): void;
}

export class SharedState {
  private readonly revisions = new Map<string, number>();
  private watcher: GuardedWatch | null = null;

  constructor(
    private readonly kv: KV,
    private readonly log: Logger,
  ) {}

  /** The signing key's material: the one already shared, or `make()`'s, if this instance is first. */
  async signingKey(name: string, make: () => Buffer): Promise<Buffer> {
    const deadline = Date.now() + 60_000;
    return retrying(async () => {
      const found = await this.kv.get(`key.${name}`);
      if (found && found.operation === 'PUT') return Buffer.from(found.string(), 'base64');
      const material = make();
      try {
        await this.kv.create(`key.${name}`, material.toString('base64'));
        return material;
      } catch (err) {
        // Another instance created it first: use that one.
        if (!isConflict(err)) throw err;
        const other = await this.kv.get(`key.${name}`);
        return Buffer.from(other!.string(), 'base64');
      }
    }, deadline).catch((err: unknown) => {
      if (isConflict(err)) throw new Error('the shared signing key changed while it was read; start again');
      throw err;
    });
  }

  private remember(e: KvEntry | null): void {
    if (e) this.revisions.set(e.key, e.revision);
  }

  async get<T>(key: string): Promise<T | undefined> {
    const e = await this.kv.get(key);
    if (!e) this.revisions.delete(key);
    this.remember(e);
    return e && e.operation === 'PUT' ? e.json<T>() : undefined;
  }

  /** Writes `value` if the key is still at the revision last seen here (or absent, if none was); false on a conflict. */
  async put(key: string, value: unknown): Promise<boolean> {
    const rev = this.revisions.get(key);
    try {
      const next = rev === undefined ? await this.kv.create(key, enc(value)) : await this.kv.update(key, enc(value), rev);
      this.revisions.set(key, next);
      return true;
    } catch (err) {
      if (!isConflict(err)) throw err;
      await this.get(key);
      this.log.info({ key, expected: rev, found: this.revisions.get(key) }, 'a shared key changed since this instance last read it');
      return false;
    }
  }

  /** Writes `value` whatever is there (last writer wins: for facts that only move forward). */
  async overwrite(key: string, value: unknown): Promise<void> {
    this.revisions.set(key, await this.kv.put(key, enc(value)));
  }

  async remove(key: string): Promise<void> {
    await this.kv.delete(key);
    this.revisions.delete(key);
  }

  async keys(prefix: string): Promise<string[]> {
    const out: string[] = [];
    for await (const k of await this.kv.keys(`${prefix}>`)) out.push(k);
    return out;
  }

  /** Follows every key from now on (the current values first). */
  async watch(w: Watchers): Promise<void> {
    // Guarded (watch.ts): a watch standing still here would keep a password changed elsewhere from
    // retiring the old tokens on this instance.
    this.watcher = new GuardedWatch(
      this.kv,
      (e) => {
        this.remember(e);
        if (!/^(user|nodegen|group|hook|hookstate)\./.test(e.key)) return;
        const value = e.operation === 'PUT' ? e.json<unknown>() : null;
        try {
          if (e.key.startsWith('user.')) w.user?.(value as UserRecord | null, nameOf(e.key));
          else if (e.key.startsWith('nodegen.')) w.nodeGeneration?.(nameOf(e.key), value as { gen: number; at: number } | null);
          else if (e.key.startsWith('group.')) w.group?.(nameOf(e.key), value as StoredGroup | null);
          else if (e.key.startsWith('hook.')) w.webhook?.(nameOf(e.key), value);
          else if (e.key.startsWith('hookstate.')) w.webhookState?.(nameOf(e.key), value);
        } catch (err) {
          this.log.error({ err, key: e.key }, 'applying a shared change failed');
        }
      },
      'meta',
      this.log,
    );
    await this.watcher.start();
  }

  /** Restarts of its watch (watch.ts). */
  watchRestarts(): number {
    return this.watcher?.counters.restarts ?? 0;
  }

  stop(): void {
    this.watcher?.stop();
  }
}
