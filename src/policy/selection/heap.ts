// An indexed binary min-heap. Items carry their own position, so that a load change (every
// heartbeat, every assignment) is one O(log n) sift with no map lookups on the lookup path.

export interface HeapItem {
  /** Lower is better. */
  heapKey: number;
  /** Breaks ties between equal keys, so that the order is total and repeatable. */
  heapTie: number;
  /** Position in the heap that holds the item, -1 when in none. Owned by the heap. */
  heapIndex: number;
}

const before = (a: HeapItem, b: HeapItem): boolean => a.heapKey < b.heapKey || (a.heapKey === b.heapKey && a.heapTie < b.heapTie);

export class IndexedMinHeap<T extends HeapItem> {
  private readonly items: T[] = [];

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  /** The item at position i in heap order (0 is the minimum); for strategies that sample the top. */
  at(i: number): T | undefined {
    return this.items[i];
  }

  has(item: T): boolean {
    return item.heapIndex >= 0 && this.items[item.heapIndex] === item;
  }

  push(item: T): void {
    if (this.has(item)) {
      this.update(item);
      return;
    }
    item.heapIndex = this.items.length;
    this.items.push(item);
    this.up(item.heapIndex);
  }

  /** Restores heap order after the item's key changed. */
  update(item: T): void {
    if (!this.has(item)) return;
    this.down(this.up(item.heapIndex));
  }

  remove(item: T): boolean {
    if (!this.has(item)) return false;
    const i = item.heapIndex;
    const last = this.items.pop()!;
    item.heapIndex = -1;
    if (last !== item) {
      this.items[i] = last;
      last.heapIndex = i;
      this.down(this.up(i));
    }
    return true;
  }

  *[Symbol.iterator](): IterableIterator<T> {
    yield* this.items;
  }

  private up(i: number): number {
    const items = this.items;
    const item = items[i]!;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = items[p]!;
      if (!before(item, parent)) break;
      items[i] = parent;
      parent.heapIndex = i;
      i = p;
    }
    items[i] = item;
    item.heapIndex = i;
    return i;
  }

  private down(i: number): number {
    const items = this.items;
    const n = items.length;
    const item = items[i]!;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && before(items[r]!, items[l]!) ? r : l;
      const child = items[c]!;
      if (!before(child, item)) break;
      items[i] = child;
      child.heapIndex = i;
      i = c;
    }
    items[i] = item;
    item.heapIndex = i;
    return i;
  }
}
