// The one logger shape every component takes: leveled, a message and structured fields. Whoever
// starts a process picks the implementation (jsonLogger on stderr); libraries default to silence.

import { type Clock, systemClock } from "./clock.ts";

export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

/** One JSON object per line on stderr: what operators grep and log shippers parse. */
export function jsonLogger(
  component: string,
  stream: NodeJS.WritableStream = process.stderr,
  clock: Clock = systemClock,
): Logger {
  const write = (level: string) => (message: string, fields?: Record<string, unknown>) => {
    stream.write(
      `${JSON.stringify({ time: new Date(clock.now()).toISOString(), level, component, message, ...fields })}\n`,
    );
  };
  return { info: write("info"), warn: write("warn"), error: write("error") };
}
