// client-go's ItemExponentialFailureRateLimiter: each failure of a key doubles its delay,
// from `baseMs` to at most `maxMs`; a success (forget) starts it over.

export interface RateLimiter {
  /** The delay before retrying key, counting this failure. */
  when(key: string): number;
  /** The key succeeded: its next failure starts from the base delay again. */
  forget(key: string): void;
  /** Failures counted for key since it was last forgotten. */
  retries(key: string): number;
}

export class ExponentialFailureRateLimiter implements RateLimiter {
  readonly baseMs: number;
  readonly maxMs: number;
  #failures = new Map<string, number>();

  /** Defaults as client-go's DefaultControllerRateLimiter: 5 ms doubling to 1000 s. */
  constructor(baseMs = 5, maxMs = 1_000_000) {
    this.baseMs = baseMs;
    this.maxMs = maxMs;
  }

  when(key: string): number {
    const failures = this.#failures.get(key) ?? 0;
    this.#failures.set(key, failures + 1);
    // 2^failures overflows to Infinity long after maxMs is reached; min() keeps it finite.
    return Math.min(this.baseMs * 2 ** failures, this.maxMs);
  }

  forget(key: string): void {
    this.#failures.delete(key);
  }

  retries(key: string): number {
    return this.#failures.get(key) ?? 0;
  }
}
