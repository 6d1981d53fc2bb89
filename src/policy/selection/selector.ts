// One interface for choosing a node, one small file per strategy, and a registry (./registry.ts)
// from which the config's strategy names derive (after LiveKit's pkg/routing/selector). A
// strategy sees per-region pools of INSERVICE candidates, each a min-heap by load, and the
// client's region order, or a short list of candidates (the edges already carrying a stream); it
// never sees the rest of the group's state.
import type { HeapItem, IndexedMinHeap } from './heap.js';

export interface Candidate extends HeapItem {
  readonly id: string;
  /** The node's full mark: a candidate whose load (heapKey) is at or above it has no room. */
  limit: number;
}

export type PoolOf<T extends Candidate> = (region: string) => IndexedMinHeap<T> | undefined;

export interface Selector {
  readonly name: string;
  /** The node to hand out from the pools, nearest region first; undefined when none has room. */
  pick<T extends Candidate>(pools: PoolOf<T>, regions: readonly string[]): T | undefined;
  /** The node to hand out among a few candidates that all have room (one region's). */
  choose<T extends Candidate>(candidates: readonly T[]): T | undefined;
}

/** What a strategy may be built with: a random source (seeded in tests) and the group's settings. */
export interface SelectorOptions {
  random: () => number;
  /** Near-equal: within this fraction of the limit of the lightest node (at least one connection). */
  nearEqual: number;
}

export const hasRoom = (c: Candidate): boolean => c.heapKey < c.limit;

/** The lighter of two candidates, ties broken by age (heapTie), so choices are stable. */
export const lighter = <T extends Candidate>(a: T, b: T): T => (b.heapKey < a.heapKey || (b.heapKey === a.heapKey && b.heapTie < a.heapTie) ? b : a);
