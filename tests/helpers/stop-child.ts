// Stopping a child process the way a service manager does, with a bound: the signal, then SIGKILL
// when it has not exited within the grace period. A teardown that awaited `exit` alone hung the
// whole file when a child had already exited by a signal (its `exit` event long past) or ignored
// the signal; tap then ended it at its 600 s timeout with no word of which process it was.
import type { ChildProcess } from "node:child_process";

export interface StopChildOptions {
  /** Default SIGTERM. */
  signal?: NodeJS.Signals;
  /** Default 15 s. */
  graceMs?: number;
  /** Named in the line written to stderr when the child had to be killed. */
  label?: string;
}

/** True once the child has exited, by a code or by a signal. */
export const hasExited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

/**
 * Resolves once `child` has exited. Returns false when it did not exit within the grace period
 * and was killed with SIGKILL (and says so on stderr, naming it).
 */
export async function stopChild(child: ChildProcess, options: StopChildOptions = {}): Promise<boolean> {
  if (hasExited(child)) return true;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill(options.signal ?? "SIGTERM");
  let timer: NodeJS.Timeout | undefined;
  const inTime = await Promise.race([
    exited.then(() => true),
    new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), options.graceMs ?? 15_000);
    }),
  ]);
  clearTimeout(timer);
  if (inTime) return true;
  process.stderr.write(
    `stop-child: ${options.label ?? child.spawnargs.join(" ").slice(0, 200)} (pid ${child.pid}) did not exit ${
      options.graceMs ?? 15_000
    } ms after ${options.signal ?? "SIGTERM"}: killed\n`,
  );
  child.kill("SIGKILL");
  if (!hasExited(child)) await exited;
  return false;
}
