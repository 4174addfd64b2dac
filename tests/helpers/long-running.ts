// A long-running command (`rlark up`) as a real process: what it has printed so far, its exit,
// and a kill at teardown so a failed test leaves nothing behind.
import { type SpawnOptions, spawn } from "node:child_process";

interface Teardown {
  teardown(fn: () => void): void;
}

export interface LongRunning {
  /** Everything it has printed on stdout so far (stderr is drained, not kept). */
  stdout(): string;
  /** Its exit code, once it exits. */
  exited: Promise<number | null>;
  kill(signal: NodeJS.Signals): void;
}

export function startLongRunning(
  t: Teardown,
  command: string,
  args: string[],
  options: SpawnOptions = {},
): LongRunning {
  const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.resume();
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  t.teardown(() => {
    child.kill("SIGKILL");
  });
  return { stdout: () => stdout, exited, kill: (signal) => child.kill(signal) };
}

const cli = new URL("../../operators/cli/main.ts", import.meta.url).pathname;

/** `rlark up` on `dataDir` with the HTTP and SSH listeners on free ports of 127.0.0.1. */
export function startRlarkUp(t: Teardown, dataDir: string): LongRunning {
  return startLongRunning(t, process.execPath, [
    cli,
    "up",
    "--data-dir",
    dataDir,
    "--http",
    "127.0.0.1:0",
    "--ssh",
    "127.0.0.1:0",
  ]);
}
