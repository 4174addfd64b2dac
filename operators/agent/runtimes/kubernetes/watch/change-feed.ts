// The runtime's onChange/observe pair: a change drops the cached snapshot and tells the listeners
// once per turn of the event loop, however many caches changed in it.

import type { Logger } from "../../../../lib/logger.ts";
import type { RuntimeSnapshot } from "../../types.ts";
import { describeApiError } from "../api-error.ts";

export class ChangeFeed {
  readonly #logger: Logger;
  readonly #listeners = new Set<() => void>();
  #pending = false;
  #snapshot: RuntimeSnapshot | undefined;
  #stopped = false;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  changed(): void {
    this.#snapshot = undefined;
    if (this.#pending || this.#stopped) return;
    this.#pending = true;
    setImmediate(() => {
      this.#pending = false;
      for (const listener of [...this.#listeners]) {
        try {
          listener();
        } catch (err) {
          this.#logger.error("change listener failed", { error: describeApiError(err) });
        }
      }
    });
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The snapshot since the last change, built when none is cached. */
  snapshot(build: () => RuntimeSnapshot): RuntimeSnapshot {
    if (!this.#snapshot) this.#snapshot = build();
    return this.#snapshot;
  }

  /** Later changes tell no one; a notice already queued still goes out. */
  stop(): void {
    this.#stopped = true;
  }

  clearListeners(): void {
    this.#listeners.clear();
  }
}
