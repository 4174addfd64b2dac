// The level-triggered loop of one applier (a writer of Secrets, a reconciler of workloads, a
// poller): set(desired) says what the world should be, and runs bring it there. One run at a
// time, always of the latest state handed in: states set while a run is in progress coalesce
// into one more run, of the newest. A run that fails (throws, or says { retry: true }) is tried
// again, of the latest state, after the rate limiter's exponentially growing delay stretched by
// a random jitter (loops failing together do not retry together); a success starts the delay
// over. A new state never waits for a backoff: it runs at once. Time comes from the Clock.
//
//   const loop = new ApplyLoop<Secret[]>({ name: "secrets", run: (secrets) => write(secrets) });
//   await loop.set(secrets);   // resolves when a run of these (or newer) ends; rejects with its error
//   await loop.stop();         // no more runs; resolves when the one in progress is over

import { type Clock, systemClock, type TimerId } from "../../clock.ts";
import type { Logger } from "../../logger.ts";
import { ExponentialFailureRateLimiter, type RateLimiter } from "../rate-limiter.ts";

/** What a run says besides success: try again with backoff, or run again after a while. */
export interface RunResult {
  /** Not there yet (a Job still being replaced, a write that failed and was logged): back off. */
  retry?: boolean;
  /** Done for now; run again after this many ms (a poller's interval). */
  requeueAfter?: number;
}

export interface ApplyLoopOptions<T> {
  /** Names the loop in its log lines. */
  name: string;
  /** Brings the world to `desired`. Throwing rejects the set() calls it served and backs off. */
  run(desired: T): Promise<RunResult | undefined> | Promise<void>;
  clock?: Clock;
  /** The first retry's delay; doubles per failure in a row. Default 1 s. */
  baseMs?: number;
  /** The longest retry delay. Default 60 s. */
  maxMs?: number;
  /** Each retry delay is stretched by up to this fraction of it, at random. Default 0.2. */
  jitter?: number;
  /** Where jitter comes from: [0, 1). Default Math.random. */
  random?: () => number;
  /** When given, failed runs are logged (with the next attempt's delay). */
  logger?: Logger;
  /** What the log line says of an error (one that must not quote a body, say). Default its message. */
  describeError?: (error: unknown) => string;
}

interface Waiter {
  resolve(): void;
  reject(error: unknown): void;
}

export class ApplyLoop<T> {
  readonly name: string;
  readonly #run: ApplyLoopOptions<T>["run"];
  readonly #clock: Clock;
  readonly #limiter: RateLimiter;
  readonly #jitter: number;
  readonly #random: () => number;
  readonly #logger: Logger | undefined;
  readonly #describe: (error: unknown) => string;
  #desired: { value: T } | undefined;
  /** A run is wanted as soon as the current one (if any) ends. */
  #due = false;
  #running: Promise<void> | undefined;
  #timer: { id: TimerId; at: number } | undefined;
  /** set() calls not yet served by a run that started after them. */
  #waiters: Waiter[] = [];
  #idle: (() => void)[] = [];
  #stopped = false;

  constructor(options: ApplyLoopOptions<T>) {
    this.name = options.name;
    this.#run = options.run;
    this.#clock = options.clock ?? systemClock;
    this.#limiter = new ExponentialFailureRateLimiter(options.baseMs ?? 1000, options.maxMs ?? 60_000);
    this.#jitter = options.jitter ?? 0.2;
    this.#random = options.random ?? Math.random;
    this.#logger = options.logger;
    this.#describe = options.describeError ?? ((e) => (e instanceof Error ? e.message : String(e)));
  }

  /** Failed runs since the last success. */
  get failures(): number {
    return this.#limiter.retries(this.name);
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  /**
   * The world should be `desired`: runs once the run in progress, if any, ends. Resolves when a
   * run that started after this call ends well (or the loop stops first); rejects with the error
   * of that run when it throws (the loop tries again all the same).
   */
  set(desired: T): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    this.#desired = { value: desired };
    const served = new Promise<void>((resolve, reject) => this.#waiters.push({ resolve, reject }));
    this.#request();
    return served;
  }

  /** Runs again, of the latest state, after `afterMs` (unless a run is due sooner). Before any set(): nothing. */
  kick(afterMs = 0): void {
    if (this.#stopped || !this.#desired) return;
    if (afterMs <= 0) this.#request();
    else this.#arm(afterMs);
  }

  /** Resolves when no run is in progress or due now (a retry may be waiting for its time). */
  settled(): Promise<void> {
    if (!this.#running) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** No more runs, retries included; resolves when the run in progress, if any, is over. */
  stop(): Promise<void> {
    this.#stopped = true;
    this.#disarm();
    for (const waiter of this.#waiters.splice(0)) waiter.resolve();
    return this.settled();
  }

  #request(): void {
    this.#disarm();
    this.#due = true;
    this.#running ??= this.#drain();
  }

  async #drain(): Promise<void> {
    // Not in set()'s own call: states set in the same tick make one run, of the last.
    await null;
    while (this.#due && !this.#stopped && this.#desired) {
      this.#due = false;
      const waiters = this.#waiters.splice(0);
      let result: RunResult | undefined;
      let failed = false;
      let error: unknown;
      try {
        result = (await this.#run(this.#desired.value)) ?? undefined;
      } catch (e) {
        failed = true;
        error = e;
      }
      if (failed || result?.retry) {
        const delay = this.#backoff();
        if (failed)
          this.#logger?.warn(`${this.name} failed; trying again`, {
            error: this.#describe(error),
            retryInMs: Math.round(delay),
          });
        if (!this.#due && !this.#stopped) this.#arm(delay);
      } else {
        this.#limiter.forget(this.name);
        if (result?.requeueAfter !== undefined && !this.#due && !this.#stopped) {
          if (result.requeueAfter <= 0) this.#due = true;
          else this.#arm(result.requeueAfter);
        }
      }
      for (const waiter of waiters) {
        if (failed) waiter.reject(error);
        else waiter.resolve();
      }
    }
    this.#running = undefined;
    for (const resolve of this.#idle.splice(0)) resolve();
  }

  /** The next retry's delay: the rate limiter's, stretched by [0, jitter) of it. */
  #backoff(): number {
    const delay = this.#limiter.when(this.name);
    return delay * (1 + this.#jitter * this.#random());
  }

  /** A timer for a run in `ms`, unless one is set for sooner. */
  #arm(ms: number): void {
    const at = this.#clock.now() + ms;
    if (this.#timer && this.#timer.at <= at) return;
    this.#disarm();
    const id = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      this.#request();
    }, ms);
    this.#timer = { id, at };
  }

  #disarm(): void {
    if (this.#timer) this.#clock.clearTimeout(this.#timer.id);
    this.#timer = undefined;
  }
}
