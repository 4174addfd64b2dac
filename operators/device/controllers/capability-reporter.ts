// Keeps a controller's capability files current: written on every change and rewritten every
// `intervalMs` (the updatedAt heartbeat). A write that fails is logged, never fatal: the
// controller's own work goes on without its report.
import { type Clock, systemClock, type TimerId } from "../../lib/clock.ts";
import type { Logger } from "../../lib/logger.ts";
import { type CapabilityState, reportCapability } from "../capability-file.ts";

export interface CapabilityReporterOptions {
  dir: string;
  states: () => Map<string, CapabilityState>;
  intervalMs: number;
  logger: Logger;
  clock?: Clock;
}

export class CapabilityReporter {
  readonly #o: CapabilityReporterOptions;
  readonly #clock: Clock;
  readonly #last = new Map<string, string>();
  #timer: TimerId | undefined;
  #closed = false;

  constructor(options: CapabilityReporterOptions) {
    this.#o = options;
    this.#clock = options.clock ?? systemClock;
    this.#tick();
  }

  /** Writes the states that changed since the last write. */
  changed(): void {
    this.#write(false);
  }

  /** Writes every state one last time (the controller is going away) and stops the heartbeat. */
  close(): void {
    if (this.#timer) this.#clock.clearTimeout(this.#timer);
    this.#write(true);
    this.#closed = true;
  }

  #tick(): void {
    this.#write(true);
    this.#timer = this.#clock.setTimeout(() => this.#tick(), this.#o.intervalMs);
  }

  #write(all: boolean): void {
    if (this.#closed) return;
    for (const [name, state] of this.#o.states()) {
      const key = JSON.stringify(state);
      if (!all && this.#last.get(name) === key) continue;
      try {
        reportCapability(name, state, { dir: this.#o.dir });
        this.#last.set(name, key);
      } catch (error) {
        this.#o.logger.warn("cannot write the capability file", {
          capability: name,
          error: (error as Error).message,
        });
      }
    }
  }
}
