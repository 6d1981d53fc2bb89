// The LMDB environment (docs/persistence.md): one directory, named databases per kind of record. Every
// thread opens its own handle on the same environment; each actor writes only its own group's keys.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { open, type Database, type RootDatabase, type Transaction } from 'lmdb';
import type { BindingRecord, NodeRecord, PlannerRecord, Provision } from '../domain/records.js';
import type { EventRecord } from '../domain/events.js';
import { MIN_FREE_FLOOR } from '../domain/disk.js';
import { DiskGuard } from './disk-guard.js';
import { StoreUnavailable, stored } from './failures.js';

export type GroupKey = [group: string, id: string];

export interface StoredGroup {
  /** The node group as given (config file or admin API), before defaults. */
  spec: unknown;
  source: 'config' | 'api';
  /** A fingerprint of the config file's version of this group when it was last read. */
  configHash?: string;
  updatedAt: number;
  /** Being deleted: its nodes drain, then the group and its records go. */
  deleting?: boolean;
}

/**
 * A write handed to LMDB. Each settles with the write's own commit, never with a later one's: a
 * commit that fails after this one succeeded is not this write's failure.
 */
export interface Written {
  /** True once committed (visible, and safe from a process crash); false if its fence stopped it (nothing written); rejects with StoreUnavailable if the commit failed. */
  committed: Promise<boolean>;
  /** As `committed`, and under durability "flush" only once that commit is also flushed to disk. */
  durable: Promise<boolean>;
}

/**
 * Where a group's actor says which of its commits the store must hold before this one: the group's
 * head (the number of commits of its actors that landed) must be `head`, and becomes `head + 1`.
 * So the store only ever holds a prefix of what the actor decided: a commit that follows one that
 * failed (or that a predecessor's late commit overtook) writes nothing, and reports false.
 */
export interface Fence {
  group: string;
  head: number;
}

export interface Store {
  root: RootDatabase;
  meta: Database<unknown, string>;
  groups: Database<StoredGroup, string>;
  nodes: Database<NodeRecord, GroupKey>;
  bindings: Database<BindingRecord, GroupKey>;
  provisions: Database<Provision, GroupKey>;
  /** The scaling planner's memory of each group (src/policy/scaling/memory.ts): one record per group. */
  planner: Database<PlannerRecord, GroupKey>;
  events: Database<EventRecord, number>;
  /** Per group, the number of commits its actors made (the entry's version): see Fence. */
  heads: Database<number, string>;
  /**
   * Writes what `fn` puts and removes as one block of the next commit, fenced when `fence` is
   * given. The writes are LMDB's own single operations, done on its write thread: no JavaScript
   * runs inside the transaction. Throws StoreUnavailable (writing nothing) while the guard refuses.
   */
  write(fn: () => void, fence?: Fence): Written;
  /** A group's head as stored (0 before its first commit). */
  headOf(group: string): number;
  /**
   * For a caller that has awaited its own write: resolves once what is committed is as durable as
   * the configured durability asks (at once under "commit"; after an fsync of the environment under
   * "flush"). It never reports a later write's failure as this one's.
   */
  durable(): Promise<void>;
  /** Throws StoreUnavailable while the disk is nearly full or read-only: call before writing. */
  guard: DiskGuard;
  close(): Promise<void>;
}

const STRUCTURES = Symbol.for('switchyard.structures');

/** Writes stop while the data directory's device has less free than this (default 64 MiB). */
export const DEFAULT_MIN_FREE = 64 * 2 ** 20;

/** lmdb-js's asynchronous fsync of the environment (mdb_env_sync), which its types leave out. */
interface Syncable {
  sync(callback: (err?: Error) => void): void;
}

/** A promise that is also marked handled: a caller that awaits only one of two still hears of a failure. */
function handled<T>(p: Promise<T>): Promise<T> {
  p.catch(() => {});
  return p;
}

export function openStore(dataDir: string, durability: 'commit' | 'flush' = 'commit', minFree = DEFAULT_MIN_FREE): Store {
  if (!(minFree >= MIN_FREE_FLOOR)) throw new RangeError(`minFree ${minFree} is below the floor of ${MIN_FREE_FLOOR} bytes`);
  // A path with an extension makes lmdb keep one file (and its -lock file), not a directory.
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, 'switchyard.mdb');
  const root = open({ path, maxDbs: 16 });
  const heads = root.openDB<number, string>({ name: 'heads', useVersions: true });
  const guard = new DiskGuard(dataDir, minFree);
  let closing = false;
  return {
    root,
    meta: root.openDB({ name: 'meta' }),
    groups: root.openDB({ name: 'groups' }),
    // Shared structures: records of one shape are stored without their keys, decoded ~2.5x faster.
    nodes: root.openDB({ name: 'nodes', sharedStructuresKey: STRUCTURES }),
    bindings: root.openDB({ name: 'bindings', sharedStructuresKey: STRUCTURES }),
    provisions: root.openDB({ name: 'provisions', sharedStructuresKey: STRUCTURES }),
    planner: root.openDB({ name: 'planner' }),
    events: root.openDB({ name: 'events' }),
    heads,
    guard,
    write(fn, fence) {
      if (closing) throw new StoreUnavailable(new Error('the store is closing'));
      guard.check();
      const block = fence
        ? () => {
            heads.put(fence.group, fence.head + 1, fence.head + 1);
            fn();
          }
        : fn;
      const done = !fence ? root.batch(block) : fence.head === 0 ? heads.ifNoExists(fence.group, block) : heads.ifVersion(fence.group, fence.head, block);
      // The flush of the batch this write joined, asked for now: asked later, lmdb-js would answer
      // for whatever batch is current then (and a later batch that fails never flushes).
      const flushed = durability === 'flush' ? handled(new Promise<void>((resolve, reject) => root.flushed.then(() => resolve(), reject))) : null;
      const committed = handled(stored(done).then((ok) => ok !== false));
      const durable = flushed ? handled(committed.then((ok) => (ok ? stored(flushed).then(() => true) : false))) : committed;
      return { committed, durable };
    },
    headOf: (group) => heads.getEntry(group)?.version ?? 0,
    durable: () =>
      durability === 'flush' ? new Promise<void>((resolve, reject) => (root as unknown as Syncable).sync((err) => (err ? reject(new StoreUnavailable(err)) : resolve()))) : Promise.resolve(),
    // Writes already asked for (lmdb-js starts a batch on the next turn of the event loop) land
    // before the environment closes: closed first, they would throw where no caller hears them.
    close: async () => {
      closing = true;
      await Promise.resolve(root.committed).catch(() => {});
      await root.close();
    },
  };
}

/** Every record of one group in a group-keyed database, in key order. */
export function* groupRange<V>(db: Database<V, GroupKey>, group: string): Generator<V> {
  for (const { value } of db.getRange({ start: [group, ''], end: [`${group}\u0000`, ''] })) yield value;
}

/** The ids of one group's records, in key order. */
export function* groupKeys<V>(db: Database<V, GroupKey>, group: string): Generator<string> {
  for (const key of db.getKeys({ start: [group, ''], end: [`${group}\u0000`, ''] })) yield (key as GroupKey)[1];
}

/**
 * Every kind of record a node group's actor keeps, and the database that holds it. What a group's
 * commit writes, its replicated log replays, its snapshots carry (src/cluster/) and a reset of its
 * local copy removes all go through this one map: a kind added here rides in each of them with
 * nothing else to change.
 */
export const GROUP_TABLES = { node: 'nodes', binding: 'bindings', provision: 'provisions', planner: 'planner' } as const satisfies Record<string, keyof Store>;
export type GroupRecordKind = keyof typeof GROUP_TABLES;
export const GROUP_RECORD_KINDS = Object.keys(GROUP_TABLES) as GroupRecordKind[];

/** A record of a group to put (or, null, to remove) under `key` in its kind's database. */
export interface GroupWrite {
  kind: GroupRecordKind;
  key: string;
  value: unknown;
}

/** The database of a kind of group record (throws for a kind this version does not know). */
export function groupTable(store: Store, kind: string): Database<unknown, GroupKey> {
  const name = (GROUP_TABLES as Record<string, keyof Store>)[kind];
  if (!name) throw new Error(`a node group record of kind '${kind}', unknown to this version`);
  return store[name] as Database<unknown, GroupKey>;
}

/** Puts what `writes` say into the group's records (inside a store write: LMDB's own single operations). */
export function putGroupWrites(store: Store, group: string, writes: readonly GroupWrite[]): void {
  for (const w of writes) {
    const db = groupTable(store, w.kind);
    if (w.value === null) db.remove([group, w.key]);
    else db.put([group, w.key], w.value);
  }
}

/** Removes every record of the group, of every kind (inside a store write). */
export function clearGroup(store: Store, group: string): void {
  for (const kind of GROUP_RECORD_KINDS) {
    const db = groupTable(store, kind);
    for (const key of db.getKeys({ start: [group, ''], end: [`${group}\u0000`, ''] })) db.remove(key as GroupKey);
  }
}

/**
 * Cluster mode: up to which sequence of the group's replicated log the local copy holds it, kept in
 * the same transaction as what it applied (src/cluster/wal.ts).
 */
export const appliedKey = (group: string) => `wal:${group}`;

export function appliedOf(store: Store, group: string, options?: { transaction: Transaction }): number {
  return (store.meta.get(appliedKey(group), options) as number | undefined) ?? 0;
}

/** Marks the local copy as holding the log up to `seq` (inside a store write). */
export function markApplied(store: Store, group: string, seq: number): void {
  store.meta.put(appliedKey(group), seq);
}
