// The nearest region with room; inside it, two random choices among the near-equal lightest
// candidates (the power of two choices, as LiveKit adopted after stale load figures herded a
// burst onto one node). "Near-equal": within `band(limit)` of the lightest.
import type { IndexedMinHeap } from './heap.js';
import { hasRoom, lighter, type Candidate, type PoolOf, type Selector, type SelectorOptions } from './selector.js';

const MAX_SAMPLE = 16;

/** The candidates within `band` of the lightest, with room; the heap order prunes the walk. */
export function nearEqual<T extends Candidate>(heap: IndexedMinHeap<T>, band: number): T[] {
  const top = heap.peek();
  if (!top) return [];
  const ceiling = top.heapKey + band;
  const out: T[] = [];
  const stack = [0];
  while (stack.length > 0 && out.length < MAX_SAMPLE) {
    const i = stack.pop()!;
    const item = heap.at(i);
    if (!item || item.heapKey > ceiling) continue;
    if (hasRoom(item)) out.push(item);
    stack.push(2 * i + 2, 2 * i + 1);
  }
  return out;
}

/** Two random picks from a list; the lighter one wins. */
export function pickTwo<T extends Candidate>(candidates: readonly T[], random: () => number): T | undefined {
  if (candidates.length <= 1) return candidates[0];
  const a = candidates[Math.floor(random() * candidates.length)]!;
  let b = candidates[Math.floor(random() * (candidates.length - 1))]!;
  if (b === a) b = candidates[candidates.length - 1]!;
  return lighter(a, b);
}

/** How close to the lightest a node must be to count as near-equal: a fraction of the limit, at least one connection. */
export const nearEqualBand =
  (fraction: number) =>
  (limit: number): number =>
    Math.max(1, Number.isFinite(limit) ? fraction * limit : 1);

export function twoChoices({ random, nearEqual: fraction }: SelectorOptions): Selector {
  const band = nearEqualBand(fraction);
  return {
    name: 'two-choices',
    pick<T extends Candidate>(pools: PoolOf<T>, regions: readonly string[]): T | undefined {
      for (const region of regions) {
        const heap = pools(region);
        const top = heap?.peek();
        if (!heap || !top || !hasRoom(top)) continue;
        return pickTwo(nearEqual(heap, band(top.limit)), random) ?? top;
      }
      return undefined;
    },
    choose<T extends Candidate>(candidates: readonly T[]): T | undefined {
      if (candidates.length === 0) return undefined;
      const lightest = Math.min(...candidates.map((c) => c.heapKey));
      return pickTwo(
        candidates.filter((c) => c.heapKey <= lightest + band(c.limit)),
        random,
      );
    },
  };
}
