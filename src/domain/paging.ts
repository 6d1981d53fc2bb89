// The page of a list after a cursor: the `limit` smallest keys greater than `after`, in order.
// Lists of streams and nodes are kept in hash maps, not in order; sorting all of them for each
// page of 100 (a million bindings: about a second of an actor's time) is what this avoids. A
// max-heap of the best `limit` seen so far costs O(n log limit) whatever order the keys come in.

export function pageKeys(keys: Iterable<string>, after: string | undefined, limit: number): string[] {
  if (limit <= 0) return [];
  const heap: string[] = [];
  for (const key of keys) {
    if (after !== undefined && key <= after) continue;
    if (heap.length < limit) {
      heap.push(key);
      siftUp(heap, heap.length - 1);
    } else if (key < heap[0]!) {
      heap[0] = key;
      siftDown(heap, 0);
    }
  }
  return heap.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Max-heap on string order: the largest of the kept keys at the root, the first to go. */
function siftUp(h: string[], i: number): void {
  const key = h[i]!;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (h[parent]! >= key) break;
    h[i] = h[parent]!;
    i = parent;
  }
  h[i] = key;
}

function siftDown(h: string[], i: number): void {
  const key = h[i]!;
  const n = h.length;
  for (;;) {
    let child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && h[child + 1]! > h[child]!) child++;
    if (h[child]! <= key) break;
    h[i] = h[child]!;
    i = child;
  }
  h[i] = key;
}
