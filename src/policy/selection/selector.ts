// One interface for choosing a node, one small file per strategy (after LiveKit's
// pkg/routing/selector). A strategy sees per-region pools of INSERVICE candidates, each a min-heap
// by load, and the client's region order; it never sees the rest of the group's state.
import type { HeapItem, IndexedMinHeap } from './heap.js';

export interface Candidate extends HeapItem {
  readonly id: string;
  /** The node's full mark: a candidate whose load (heapKey) is at or above it has no room. */
  limit: number;
}

export type PoolOf<T extends Candidate> = (region: string) => IndexedMinHeap<T> | undefined;

export interface Selector {
  readonly name: string;
  /** The node to hand out, or undefined when no region in `regions` has room. */
  pick<T extends Candidate>(pools: PoolOf<T>, regions: readonly string[]): T | undefined;
}

export const hasRoom = (c: Candidate): boolean => c.heapKey < c.limit;
