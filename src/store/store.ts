// The LMDB environment (CONTRACT §9): one directory, named databases per kind of record. Every
// thread opens its own handle on the same environment; each actor writes only its own group's keys.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { open, type Database, type RootDatabase } from 'lmdb';
import type { BindingRecord, NodeRecord, Provision } from '../domain/records.js';
import type { EventRecord } from '../domain/events.js';
import { DiskGuard, MIN_FREE_FLOOR } from './disk-guard.js';

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

export interface Store {
  root: RootDatabase;
  meta: Database<unknown, string>;
  groups: Database<StoredGroup, string>;
  nodes: Database<NodeRecord, GroupKey>;
  bindings: Database<BindingRecord, GroupKey>;
  provisions: Database<Provision, GroupKey>;
  events: Database<EventRecord, number>;
  /** Resolves once what was written so far is as durable as the configured durability asks. */
  durable(): Promise<void>;
  /** Throws StoreUnavailable while the disk is nearly full or read-only: call before writing. */
  guard: DiskGuard;
  close(): Promise<void>;
}

const STRUCTURES = Symbol.for('switchyard.structures');

/** Writes stop while the data directory's device has less free than this (default 64 MiB). */
export const DEFAULT_MIN_FREE = 64 * 2 ** 20;

export function openStore(dataDir: string, durability: 'commit' | 'flush' = 'commit', minFree = DEFAULT_MIN_FREE): Store {
  if (!(minFree >= MIN_FREE_FLOOR)) throw new RangeError(`minFree ${minFree} is below the floor of ${MIN_FREE_FLOOR} bytes`);
  // A path with an extension makes lmdb keep one file (and its -lock file), not a directory.
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, 'switchyard.mdb');
  const root = open({ path, maxDbs: 16 });
  return {
    root,
    meta: root.openDB({ name: 'meta' }),
    groups: root.openDB({ name: 'groups' }),
    // Shared structures: records of one shape are stored without their keys, decoded ~2.5x faster.
    nodes: root.openDB({ name: 'nodes', sharedStructuresKey: STRUCTURES }),
    bindings: root.openDB({ name: 'bindings', sharedStructuresKey: STRUCTURES }),
    provisions: root.openDB({ name: 'provisions', sharedStructuresKey: STRUCTURES }),
    events: root.openDB({ name: 'events' }),
    guard: new DiskGuard(dataDir, minFree),
    durable: async () => {
      await root.committed;
      if (durability === 'flush') await root.flushed;
    },
    close: () => root.close(),
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
