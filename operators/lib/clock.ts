// Time as a dependency: production code takes a Clock, tests pass a FakeClock and advance it,
// so nothing sleeps and nothing is timed against the wall.

export type TimerId = { readonly id: number };

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  setTimeout(callback: () => void, ms: number): TimerId;
  clearTimeout(timer: TimerId): void;
}

// Timers are not unref'd: a pending retry keeps the process alive, as it should; whoever
// starts timers clears them on stop.
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(callback, ms) {
    const handle = setTimeout(callback, ms);
    return { id: Number(handle[Symbol.toPrimitive]()) };
  },
  clearTimeout(timer) {
    clearTimeout(timer.id);
  },
};

interface PendingTimer {
  at: number;
  seq: number;
  callback: () => void;
}

/** A clock that moves only when told to. Timers fire in due order, ties in creation order. */
export class FakeClock implements Clock {
  #now: number;
  #seq = 0;
  #timers = new Map<number, PendingTimer>();

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(callback: () => void, ms: number): TimerId {
    const seq = ++this.#seq;
    this.#timers.set(seq, { at: this.#now + Math.max(0, ms), seq, callback });
    return { id: seq };
  }

  clearTimeout(timer: TimerId): void {
    this.#timers.delete(timer.id);
  }

  /** Number of timers not yet fired. */
  get pending(): number {
    return this.#timers.size;
  }

  /** The delays (from now) of the pending timers, soonest first. */
  pendingDelays(): number[] {
    return [...this.#timers.values()].map((t) => t.at - this.#now).sort((a, b) => a - b);
  }

  /** Moves time forward by `ms`, firing every timer that falls due, in order. */
  advance(ms: number): void {
    const target = this.#now + ms;
    for (;;) {
      let next: PendingTimer | undefined;
      for (const timer of this.#timers.values()) {
        if (
          timer.at <= target &&
          (!next || timer.at < next.at || (timer.at === next.at && timer.seq < next.seq))
        ) {
          next = timer;
        }
      }
      if (!next) break;
      this.#timers.delete(next.seq);
      this.#now = next.at;
      next.callback();
    }
    this.#now = target;
  }
}

/**
 * Calls `callback` every `ms` on `clock` (as setInterval: the next call is armed before this one
 * runs, so a throwing callback does not end the loop) until the returned function is called.
 */
export function every(clock: Clock, ms: number, callback: () => void): () => void {
  let timer: TimerId;
  const tick = () => {
    timer = clock.setTimeout(tick, ms);
    callback();
  };
  timer = clock.setTimeout(tick, ms);
  return () => clock.clearTimeout(timer);
}
