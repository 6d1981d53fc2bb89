import test from 'ava';
import fc from 'fast-check';
import { IndexedMinHeap, type HeapItem } from '../../src/policy/selection/heap.js';

interface Item extends HeapItem {
  id: number;
}

type Op = { op: 'push' | 'update' | 'remove'; id: number; key: number };

const ops = fc.array(fc.record({ op: fc.constantFrom<'push' | 'update' | 'remove'>('push', 'update', 'remove'), id: fc.integer({ min: 0, max: 30 }), key: fc.integer({ min: 0, max: 20 }) }), {
  maxLength: 300,
});

test('the heap agrees with a sorted list under random pushes, updates and removals', (t) => {
  fc.assert(
    fc.property(ops, (sequence: Op[]) => {
      const heap = new IndexedMinHeap<Item>();
      const items = new Map<number, Item>();
      const inHeap = new Set<number>();
      for (const { op, id, key } of sequence) {
        let item = items.get(id);
        if (!item) items.set(id, (item = { id, heapKey: 0, heapTie: id, heapIndex: -1 }));
        if (op === 'push') {
          item.heapKey = key;
          heap.push(item);
          inHeap.add(id);
        } else if (op === 'update') {
          item.heapKey = key;
          heap.update(item);
        } else {
          heap.remove(item);
          inHeap.delete(id);
        }
        if (heap.size !== inHeap.size) return false;
        const expected = [...inHeap].map((i) => items.get(i)!).sort((a, b) => a.heapKey - b.heapKey || a.heapTie - b.heapTie)[0];
        if (heap.peek() !== expected) return false;
        for (const [i, it] of items) if (heap.has(it) !== inHeap.has(i)) return false;
      }
      // Drain it: items come out in (key, tie) order.
      const out: Item[] = [];
      while (heap.size > 0) {
        const top = heap.peek()!;
        out.push(top);
        heap.remove(top);
      }
      return out.every((it, i) => i === 0 || out[i - 1]!.heapKey < it.heapKey || (out[i - 1]!.heapKey === it.heapKey && out[i - 1]!.heapTie < it.heapTie));
    }),
  );
  t.pass();
});

test('an item in one heap is not mistaken for a member of another', (t) => {
  const a = new IndexedMinHeap<Item>();
  const b = new IndexedMinHeap<Item>();
  const x: Item = { id: 1, heapKey: 1, heapTie: 1, heapIndex: -1 };
  const y: Item = { id: 2, heapKey: 1, heapTie: 2, heapIndex: -1 };
  a.push(x);
  b.push(y);
  t.false(b.has(x));
  t.false(b.remove(x));
  t.is(b.peek(), y);
});
