// The git commands that talk to a remote (fetch, ls-remote, push), bounded: a server that stops
// answering (frozen, partitioned, blackholed) would otherwise hold the hub's fetch until git's own
// limits, 10 minutes and more (git has none for a silent git:// or ssh peer). Each runs in a
// process group of its own with its progress shown (`--progress`), and when it has shown no
// progress for `timeoutMs` (default 60 s) the whole group is killed: git and its transport
// (git-remote-https, ssh), which killing git alone would leave blocked on the dead connection.
// A slow transfer that keeps moving is never cut: git reports progress at least once a second
// while bytes arrive.
//
//   const out = await gitRemote(dir, ["fetch", "--quiet", "--progress", url, refspec], { env, timeoutMs });

import { spawn } from "node:child_process";
import { ambientEnv } from "./git-exec.ts";

/** How long a remote git command may show no progress before it is killed (`rlark hub --git-timeout`). */
export const DEFAULT_GIT_TIMEOUT_MS = 60_000;

/** Output kept: stdout (ls-remote's refs) up to 4 MiB, stderr's last 16 KiB (the error). */
const MAX_STDOUT = 4 << 20;
const MAX_STDERR_TAIL = 16 << 10;

export interface GitRemoteOptions {
  /** Credentials and identities on top of the process's own environment (GIT_* of it dropped). */
  env?: Readonly<Record<string, string>>;
  /** Kill the command when it has shown no progress this long. Default DEFAULT_GIT_TIMEOUT_MS. */
  timeoutMs?: number;
}

/**
 * The process groups of the remote commands running now. Detached, they would outlive the hub:
 * a hub that exits (a leader that lost its Lease exits at once) kills them on its way out, so no
 * fetch or push of a former leader goes on behind the new one. Process-wide by nature: one exit.
 */
const running = new Set<number>();
let killOnExit = false;
function track(pid: number): void {
  running.add(pid);
  if (killOnExit) return;
  killOnExit = true;
  process.once("exit", () => {
    for (const group of running)
      try {
        process.kill(-group, "SIGKILL");
      } catch {
        // gone
      }
  });
}

/** Git gave no sign of progress for the timeout and was killed (with its transport). */
export class GitTimeoutError extends Error {
  override name = "GitTimeoutError";
}

/** Runs `git <args>` in `dir`; resolves with its stdout, rejects with its error output. */
export function gitRemote(
  dir: string,
  args: readonly string[],
  options: GitRemoteOptions = {},
): Promise<string> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_GIT_TIMEOUT_MS;
  // the subcommand, past any `-c key=value`
  const verb = args.find((arg) => /^[a-z][a-z-]*$/.test(arg)) ?? "command";
  return new Promise((resolve, reject) => {
    const child = spawn("git", args, {
      cwd: dir,
      env: { ...ambientEnv(), GIT_TERMINAL_PROMPT: "0", ...options.env },
      stdio: ["ignore", "pipe", "pipe"],
      // its own process group, so the timeout kills git's transport with it
      detached: true,
    });
    if (child.pid) track(child.pid);
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stderr = "";
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    const killGroup = () => {
      try {
        if (child.pid) process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
    };
    const quiet = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = true;
        killGroup();
      }, timeoutMs);
    };
    quiet();
    child.stdout.on("data", (chunk: Buffer) => {
      quiet();
      if (stdoutBytes >= MAX_STDOUT) return;
      stdout.push(chunk);
      stdoutBytes += chunk.length;
    });
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
      quiet();
      stderr = (stderr + chunk).slice(-MAX_STDERR_TAIL);
    });
    child.on("error", (error) => {
      clearTimeout(timer);
      if (child.pid) running.delete(child.pid);
      reject(error);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (child.pid) running.delete(child.pid);
      // A transport child still holding the group (git died of something else) goes too. Not
      // after a clean exit: git has waited for its transport, and the group is gone.
      if (code !== 0) killGroup();
      if (timedOut) {
        reject(
          new GitTimeoutError(
            `no progress for ${seconds(timeoutMs)}: killed git ${verb} (the server does not answer)`,
          ),
        );
      } else if (code === 0) {
        if (stdoutBytes > MAX_STDOUT) reject(new Error(`git ${verb} wrote more than ${MAX_STDOUT} bytes`));
        else resolve(Buffer.concat(stdout).toString("utf8"));
      } else {
        const why = errorLines(stderr) || (signal ? `killed by ${signal}` : `exit code ${code}`);
        reject(new Error(why));
      }
    });
  });
}

/** Git's error output without its progress meters ("Receiving objects:  45% (…)\r"). */
function errorLines(stderr: string): string {
  return stderr
    .split(/\r|\n/)
    .filter((line) => line.trim() !== "" && !PROGRESS.test(line))
    .join("\n")
    .trim();
}

const PROGRESS = /^(remote: )?[A-Z][a-z]+( [a-z]+)*: +(\d+%|\d+(, done)?)|^(remote: )?Total \d+/;

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
