import { type Clock, systemClock } from "../../lib/clock.ts";

/**
 * Fixed-window attempt counter per key (a client address, a login name). The login counts an
 * attempt before checking its password and takes it back when the password was right, so
 * attempts still being checked count too: parallel guesses cannot all pass a count of zero.
 */
export interface RateLimiter {
  /** Seconds until `key` may try again, or 0 when it may now. */
  retryAfter(key: string): number;
  /** Counts an attempt against `key`. */
  hit(key: string): void;
  /** Takes back one attempt counted against `key` in its current window (it succeeded). */
  release(key: string): void;
}

export function createRateLimiter(options: { max: number; windowMs: number; clock?: Clock }): RateLimiter {
  const clock = options.clock ?? systemClock;
  const windows = new Map<string, { start: number; count: number }>();
  const current = (key: string) => {
    const window = windows.get(key);
    if (window && clock.now() - window.start < options.windowMs) return window;
    if (window) windows.delete(key);
    return undefined;
  };
  return {
    retryAfter(key) {
      const window = current(key);
      if (!window || window.count < options.max) return 0;
      return Math.max(1, Math.ceil((window.start + options.windowMs - clock.now()) / 1000));
    },
    hit(key) {
      const window = current(key);
      if (window) window.count++;
      else {
        // Bounded memory under a spray of keys: forget the oldest windows first.
        if (windows.size >= 10_000) windows.delete(windows.keys().next().value as string);
        windows.set(key, { start: clock.now(), count: 1 });
      }
    },
    release(key) {
      const window = current(key);
      if (window && window.count > 0) window.count--;
    },
  };
}
