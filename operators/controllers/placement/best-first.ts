// Items in descending order of score (ties by name), taken one at a time: a binary heap, so the
// first few of a thousand clusters cost O(n) to build and O(log n) each, where sorting them all
// would cost O(n log n) for a choice that almost always goes to the first.

export interface Ranked {
  readonly score: number;
  readonly name: string;
}

/** True when `a` comes before `b`: higher score, then the lower name. */
function before(a: Ranked, b: Ranked): boolean {
  return a.score > b.score || (a.score === b.score && a.name < b.name);
}

export class BestFirst<T extends Ranked> {
  readonly #heap: T[];

  constructor(items: T[]) {
    this.#heap = items;
    for (let i = (items.length >> 1) - 1; i >= 0; i--) this.#down(i);
  }

  get size(): number {
    return this.#heap.length;
  }

  /** The best item left, removed; undefined when none is left. */
  take(): T | undefined {
    const heap = this.#heap;
    const top = heap[0];
    const last = heap.pop();
    if (heap.length > 0 && last !== undefined) {
      heap[0] = last;
      this.#down(0);
    }
    return top;
  }

  #down(i: number): void {
    const heap = this.#heap;
    const n = heap.length;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) return;
      const right = left + 1;
      let best = left;
      if (right < n && before(heap[right] as T, heap[left] as T)) best = right;
      if (!before(heap[best] as T, heap[i] as T)) return;
      [heap[i], heap[best]] = [heap[best] as T, heap[i] as T];
      i = best;
    }
  }
}
