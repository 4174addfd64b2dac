// The per-Domain connection pool to the hub (seed 001 §4.5): one connection to start; a new one
// (at most `max`, default 4) only when every connection carries active streams; each new stream
// on the least-loaded connection; one dial at a time, that concurrent callers wait on rather than
// dialling their own; after a failed dial, callers fail fast until the backoff (1 s doubling to
// 30 s) has passed; a GC closes connections idle longer than `idleMs` (default 24 h).

import { type Clock, every, systemClock } from "../lib/clock.ts";

export interface PooledConnection {
  /** Streams open on it now. */
  readonly activeStreams: number;
  /** Last time a byte moved or a stream opened or closed (clock ms). */
  readonly lastActive: number;
  readonly closed: boolean;
  close(): void;
  /** Registers the callback run once when the connection closes, for whatever reason. */
  onClose(callback: () => void): void;
}

export interface PoolOptions<C extends PooledConnection> {
  dial: () => Promise<C>;
  max?: number;
  idleMs?: number;
  clock?: Clock;
  /** GC period; default a minute (or idleMs, if shorter). */
  gcIntervalMs?: number;
}

export const MIN_BACKOFF_MS = 1_000;
export const MAX_BACKOFF_MS = 30_000;
export const DEFAULT_IDLE_MS = 24 * 60 * 60 * 1000;

export class BackoffError extends Error {}

export class ConnectionPool<C extends PooledConnection> {
  readonly #dial: () => Promise<C>;
  readonly #max: number;
  readonly #idleMs: number;
  readonly #clock: Clock;
  readonly #stopGc: () => void;
  #connections: C[] = [];
  #dialing: Promise<C> | undefined;
  #failures = 0;
  #retryAt = 0;
  #closed = false;

  constructor(options: PoolOptions<C>) {
    this.#dial = options.dial;
    this.#max = options.max ?? 4;
    this.#idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
    this.#clock = options.clock ?? systemClock;
    const period = options.gcIntervalMs ?? Math.min(60_000, this.#idleMs);
    this.#stopGc = every(this.#clock, period, () => this.collectIdle());
  }

  get size(): number {
    return this.#connections.length;
  }

  get connections(): readonly C[] {
    return this.#connections;
  }

  /**
   * The connection a new stream should use: an idle one; else, below `max`, a new one (waiting on
   * the dial in flight, if any, with every other caller); else the least-loaded one. When the
   * dial fails, a busy connection still serves; with none, the caller gets the error, and callers
   * until the backoff has passed fail at once.
   */
  async acquire(): Promise<C> {
    if (this.#closed) throw new Error("the connection pool is closed");
    const live = this.#connections.filter((c) => !c.closed);
    const idle = live.find((c) => c.activeStreams === 0);
    if (idle) return idle;
    const leastLoaded = live.reduce<C | undefined>(
      (best, c) => (best === undefined || c.activeStreams < best.activeStreams ? c : best),
      undefined,
    );
    if (live.length >= this.#max && leastLoaded) return leastLoaded;
    const wait = this.#retryAt - this.#clock.now();
    if (!this.#dialing && wait > 0) {
      if (leastLoaded) return leastLoaded;
      throw new BackoffError(`the hub is unreachable; next attempt in ${Math.ceil(wait / 1000)} s`);
    }
    try {
      return await (this.#dialing ?? this.#startDial());
    } catch (error) {
      if (leastLoaded && !leastLoaded.closed) return leastLoaded;
      throw error;
    }
  }

  #startDial(): Promise<C> {
    const dialing = this.#dial().then(
      (connection) => {
        this.#dialing = undefined;
        this.#failures = 0;
        this.#retryAt = 0;
        if (this.#closed) {
          connection.close();
          throw new Error("the connection pool is closed");
        }
        this.#connections.push(connection);
        connection.onClose(() => {
          this.#connections = this.#connections.filter((c) => c !== connection);
        });
        return connection;
      },
      (error: unknown) => {
        this.#dialing = undefined;
        this.#failures++;
        this.#retryAt = this.#clock.now() + this.backoffMs();
        throw error;
      },
    );
    this.#dialing = dialing;
    return dialing;
  }

  /** The wait after the latest run of failed dials: 1 s, 2 s, 4 s, ... capped at 30 s. */
  backoffMs(): number {
    if (this.#failures === 0) return 0;
    return Math.min(MAX_BACKOFF_MS, MIN_BACKOFF_MS * 2 ** Math.min(this.#failures - 1, 16));
  }

  /** Closes the connections that carry no stream and have been quiet longer than idleMs. */
  collectIdle(): void {
    const now = this.#clock.now();
    for (const c of this.#connections) {
      if (c.activeStreams === 0 && now - c.lastActive >= this.#idleMs) c.close();
    }
    this.#connections = this.#connections.filter((c) => !c.closed);
  }

  close(): void {
    this.#closed = true;
    this.#stopGc();
    for (const c of this.#connections) c.close();
    this.#connections = [];
  }
}
