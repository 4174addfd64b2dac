// `rlark` as a real process, as a user runs it: the CLI's main.ts under this Node.
import { spawn } from "node:child_process";

const cli = new URL("../../operators/cli/main.ts", import.meta.url).pathname;

/** The project's root: where a user runs `rlark validate examples`. */
export const repoRoot = new URL("../../", import.meta.url).pathname;

export type RlarkRun = { code: number | null; stdout: string; stderr: string };

export type RlarkOptions = {
  /** The working directory; the project's root unless given. */
  cwd?: string;
  /** Added to this process's environment. */
  env?: NodeJS.ProcessEnv;
  /** What the user types on standard input; none (end of input at once) unless given. */
  input?: string;
};

/** Runs `rlark args…` to its end: the exit code and everything it printed. */
export function rlark(args: string[], options: RlarkOptions = {}): Promise<RlarkRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], {
      cwd: options.cwd ?? repoRoot,
      env: { ...process.env, ...options.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk;
    });
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
    // A command that exits before reading its input closes the pipe: not the test's failure.
    child.stdin.on("error", () => {});
    child.stdin.end(options.input ?? "");
  });
}
