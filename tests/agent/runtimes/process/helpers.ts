// Shared by the process runtime tests: real scripts on disk, /proc counting.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Test } from "tap";
import { wrapperScript } from "../../../../operators/agent/runtimes/process/launch.ts";
import type { RawWorkload, RuntimeTask } from "../../../../operators/agent/runtimes/types.ts";

/**
 * A fresh directory of the test's own, removed after it (teardowns run last-in, first-out, so after
 * any runtime opened later). Not t.testdir(): its fixed path under .tap/ collides when two test runs
 * share the working tree, and a second call wipes what the test already wrote there.
 */
export function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), "rlark-process-test-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

let uid = 0;

export function rawTask(
  name: string,
  raw: RawWorkload,
  options: { namespace?: string; uid?: string; generation?: number; job?: string } = {},
): RuntimeTask {
  return {
    metadata: {
      name,
      namespace: options.namespace ?? "agent-local",
      uid: options.uid ?? `uid-${name}-${++uid}`,
      generation: options.generation ?? 1,
      labels: { "rlinf.io/job": options.job ?? "job1" },
    },
    spec: { agentType: "Raw", role: "Actor", raw },
  };
}

/** Writes an executable script and returns its path. */
export function script(dir: string, name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(path, body, { mode: 0o755 });
  return path;
}

/** Live (non-zombie) processes whose command line contains `marker`. */
export function processesWith(marker: string): number[] {
  const found = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (state === "Z" || state === "X") continue;
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      // The wrapper shell carries the command in its argv too; count only the command itself.
      if (cmdline[1] === "-c" && cmdline[2] === wrapperScript) continue;
      if (cmdline.some((arg) => arg.includes(marker))) found.set(Number(entry), Number(ppid));
    } catch {
      // Gone while we looked.
    }
  }
  // A command's shell forks before each program it runs, and the fork carries the shell's argv
  // until it execs: a marked process whose parent is marked is that, not a second run.
  return [...found].filter(([, ppid]) => !found.has(ppid)).map(([pid]) => pid);
}

export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}
