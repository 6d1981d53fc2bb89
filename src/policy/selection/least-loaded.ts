// The nearest region with room wins; inside it, the least-loaded node (docs/choosing-nodes.md).
import { hasRoom, lighter, type Candidate, type PoolOf, type Selector } from './selector.js';

export function leastLoaded(): Selector {
  return {
    name: 'least-loaded',
    pick<T extends Candidate>(pools: PoolOf<T>, regions: readonly string[]): T | undefined {
      for (const region of regions) {
        // Every candidate of a pool shares its region's limit, so if the lightest is full, all are.
        const top = pools(region)?.peek();
        if (top && hasRoom(top)) return top;
      }
      return undefined;
    },
    choose<T extends Candidate>(candidates: readonly T[]): T | undefined {
      return candidates.length === 0 ? undefined : candidates.reduce(lighter);
    },
  };
}
