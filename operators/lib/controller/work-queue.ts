// The work queue as client-go has it: a key queued twice before a worker takes it is handed
// out once; a key is never handed to two workers at once (re-added while processing, it is
// queued again when done); delayed and rate-limited adds go through an injected clock.

import { type Clock, systemClock, type TimerId } from "../clock.ts";
import { ExponentialFailureRateLimiter, type RateLimiter } from "./rate-limiter.ts";

export interface WorkQueueOptions {
  clock?: Clock;
  rateLimiter?: RateLimiter;
  /** Called on every add that queues a key (for an adds counter). */
  onAdd?: (key: string) => void;
}

export class WorkQueue {
  #clock: Clock;
  #limiter: RateLimiter;
  #onAdd: ((key: string) => void) | undefined;
  #queue: string[] = [];
  #head = 0;
  /** Keys that need processing: queued, or re-added while processing. */
  #dirty = new Set<string>();
  #processing = new Set<string>();
  #waiting: ((key: string | undefined) => void)[] = [];
  #delayed = new Map<string, { at: number; timer: TimerId }>();
  #shuttingDown = false;
  #idle: (() => void)[] = [];

  constructor(options: WorkQueueOptions = {}) {
    this.#clock = options.clock ?? systemClock;
    this.#limiter = options.rateLimiter ?? new ExponentialFailureRateLimiter();
    this.#onAdd = options.onAdd;
  }

  /** Keys waiting for a worker (not counting those being processed or delayed). */
  get length(): number {
    return this.#queue.length - this.#head;
  }

  get processing(): number {
    return this.#processing.size;
  }

  /** Keys waiting for their delay (addAfter / addRateLimited). */
  get delayed(): number {
    return this.#delayed.size;
  }

  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  add(key: string): void {
    if (this.#shuttingDown || this.#dirty.has(key)) return;
    this.#dirty.add(key);
    this.#onAdd?.(key);
    if (this.#processing.has(key)) return;
    this.#push(key);
  }

  #push(key: string): void {
    const waiter = this.#waiting.shift();
    if (waiter) {
      this.#take(key);
      waiter(key);
      return;
    }
    this.#queue.push(key);
  }

  #take(key: string): void {
    this.#dirty.delete(key);
    this.#processing.add(key);
  }

  /** Adds key after `ms`; of several pending delays for one key the earliest wins. */
  addAfter(key: string, ms: number): void {
    if (this.#shuttingDown) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const at = this.#clock.now() + ms;
    const pending = this.#delayed.get(key);
    if (pending) {
      if (pending.at <= at) return;
      this.#clock.clearTimeout(pending.timer);
    }
    const timer = this.#clock.setTimeout(() => {
      this.#delayed.delete(key);
      this.add(key);
    }, ms);
    this.#delayed.set(key, { at, timer });
  }

  /** Adds key after its exponential backoff delay (and counts a failure). */
  addRateLimited(key: string): number {
    const delay = this.#limiter.when(key);
    this.addAfter(key, delay);
    return delay;
  }

  /** The key succeeded: reset its backoff. */
  forget(key: string): void {
    this.#limiter.forget(key);
  }

  retries(key: string): number {
    return this.#limiter.retries(key);
  }

  /** The next key to process, or undefined once shut down and drained. Call done(key) after. */
  get(): Promise<string | undefined> {
    if (this.#head < this.#queue.length) {
      const key = this.#queue[this.#head++]!;
      if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
        this.#queue = this.#queue.slice(this.#head);
        this.#head = 0;
      }
      this.#take(key);
      return Promise.resolve(key);
    }
    if (this.#shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  done(key: string): void {
    this.#processing.delete(key);
    if (this.#dirty.has(key)) this.#push(key);
    this.#checkIdle();
  }

  /**
   * Stops accepting keys and cancels delayed ones. With drain (default), keys already queued
   * are still handed out; without it they are dropped. Resolves when no key is queued or
   * being processed.
   */
  shutdown(options: { drain?: boolean } = {}): Promise<void> {
    this.#shuttingDown = true;
    for (const { timer } of this.#delayed.values()) this.#clock.clearTimeout(timer);
    this.#delayed.clear();
    if (options.drain === false) {
      this.#dirty.clear();
      this.#queue = [];
      this.#head = 0;
    }
    for (const waiter of this.#waiting.splice(0)) waiter(undefined);
    return new Promise((resolve) => {
      this.#idle.push(resolve);
      this.#checkIdle();
    });
  }

  #checkIdle(): void {
    if (!this.#shuttingDown || this.length > 0 || this.#processing.size > 0) return;
    for (const resolve of this.#idle.splice(0)) resolve();
  }
}
