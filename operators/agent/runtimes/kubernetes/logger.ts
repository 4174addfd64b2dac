// The runtime logs through whatever the agent hands it; structurally the same as the process
// runtime's, so one agent logger fits both.
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export const silentLogger: Logger = {
  info() {},
  warn() {},
  error() {},
};
