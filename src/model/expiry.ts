// Deadlines checked by the second, in buckets: an item is filed under a second no later than the
// one it expires at; when that second comes, the owner looks at it again and either lets it go or
// files it under its new, later deadline. A tick then costs the items that fall due, not a scan of
// a million bindings of which a few expire. Filing is lazy: a deadline that moves later is left
// where it was and found out when its old second comes; only a deadline that moves earlier needs
// filing again. A stale entry (the item filed elsewhere since) is skipped.

export interface Expiring {
  /** The second this item was last filed under (seconds ≥ 0), or -1 once handed back. */
  dueS: number;
}

export class ExpiryBuckets<T extends Expiring> {
  private readonly buckets = new Map<number, T[]>();

  /** Files `item` under second `dueS` (it will be handed back by the first `due(t)` with t ≥ dueS). */
  file(item: T, dueS: number): void {
    item.dueS = dueS;
    const list = this.buckets.get(dueS);
    if (list) list.push(item);
    else this.buckets.set(dueS, [item]);
  }

  /**
   * The items filed at or before `nowS`, each once, under the second it was last filed: they
   * leave the buckets, so the caller files again those that have not expired. A few dozen
   * buckets at most (one per second of the longest timeout), so looking at each is cheap.
   */
  due(nowS: number): T[] {
    const out: T[] = [];
    for (const [second, list] of this.buckets) {
      if (second > nowS) continue;
      this.buckets.delete(second);
      for (const item of list) {
        if (item.dueS !== second) continue;
        // Taken: a duplicate filing under the same second is not handed out twice. (-1, not NaN,
        // so that the field stays a small integer in every item's hidden class.)
        item.dueS = -1;
        out.push(item);
      }
    }
    return out;
  }
}
