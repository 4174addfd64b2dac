// The shared kernel's clock: the hub passes one Clock to every component.
export { type Clock, systemClock, type TimerId } from "../lib/clock.ts";

/** The few log calls the git source makes; the hub passes its structured logger. */
export interface GitLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
}

export const silentLogger: GitLogger = { info() {}, warn() {} };
