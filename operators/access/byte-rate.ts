// A user's bytes per second across all their open accesses: a token bucket that may go into debt.
// Every relay takes what it just moved and pauses its own source for as long as the debt lasts,
// so a user's transfers share the rate and nobody else's are slowed. One second's worth may pass
// at once after a pause (a shell's keystrokes never wait behind a finished download).
import type { TransformCallback } from "node:stream";

/** A stream, a WebSocket: anything that stops and starts delivering on demand. */
interface Pausable {
  pause(): unknown;
  resume(): unknown;
}

export class ByteRate {
  readonly bytesPerSecond: number;
  #tokens: number;
  #at: number;

  constructor(bytesPerSecond: number, now = performance.now()) {
    this.bytesPerSecond = bytesPerSecond;
    this.#tokens = bytesPerSecond;
    this.#at = now;
  }

  /** Takes n bytes just moved; milliseconds to wait before moving more (0: carry on). */
  take(n: number, now = performance.now()): number {
    const refill = ((now - this.#at) * this.bytesPerSecond) / 1000;
    this.#tokens = Math.min(this.bytesPerSecond, this.#tokens + refill) - n;
    this.#at = now;
    return this.#tokens >= 0 ? 0 : Math.ceil((-this.#tokens * 1000) / this.bytesPerSecond);
  }
}

/**
 * Pauses a readable while any reason to hold it lasts (the reader's backpressure, a rate's debt)
 * and resumes it when the last one is released: each reason alone would resume it too early.
 */
export class PauseReasons {
  readonly #stream: Pausable;
  #held = 0;

  constructor(stream: Pausable) {
    this.#stream = stream;
  }

  /** Holds the stream until the returned release is called (once; later calls do nothing). */
  hold(): () => void {
    if (this.#held++ === 0) this.#stream.pause();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.#held === 0) this.#stream.resume();
    };
  }

  /** Holds the stream for `ms` (nothing when 0). */
  holdFor(ms: number): void {
    if (ms <= 0) return;
    setTimeout(this.hold(), ms);
  }

  /**
   * A reason that is on or off, as a reader says "full" and later "ready": turning it on twice
   * holds the stream once, turning it off when it is off does nothing.
   */
  toggle(): { on(): void; off(): void } {
    let release: (() => void) | undefined;
    return {
      on: () => {
        release ??= this.hold();
      },
      off: () => {
        release?.();
        release = undefined;
      },
    };
  }
}

/**
 * A transform's hand-over of `chunk` after `wait` ms (at once when 0): in a pipeline that is
 * backpressure, so the source slows to the rate.
 */
export function passAfter(done: TransformCallback, chunk: Buffer, wait: number): void {
  if (wait > 0) setTimeout(() => done(null, chunk), wait);
  else done(null, chunk);
}
