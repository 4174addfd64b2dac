// `rlark` as a real process, as a user runs it: the CLI's main.ts under this Node.
import { spawn } from "node:child_process";

const cli = new URL("../../operators/cli/main.ts", import.meta.url).pathname;

/** Runs `rlark args…` to its end: the exit code and everything it printed. */
export function rlark(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], { stdio: ["ignore", "pipe", "pipe"] });
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
  });
}
