// Processes a test started, found by a marker it put in their command line, so that a test can
// count them, or kill what is left, without knowing how they were started.
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";

/**
 * Pids of live processes whose command line holds `marker`, but not Node ones (the test's own, an
 * agent or hub it started with the marker in a path): those whose program (argv[0]) is node. A
 * program that merely names "node" in its arguments (`--node-ip-address`) is one of the marked.
 */
export async function pidsMarked(marker: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "");
    if (cmdline.includes(marker) && !isNode(cmdline.split("\0")[0] ?? "")) pids.push(Number(entry));
  }
  return pids;
}

function isNode(program: string): boolean {
  return program === process.execPath || path.basename(program) === "node";
}

/** Kills with SIGKILL what still runs with `marker`, each as a process group and alone. */
export async function killMarked(marker: string): Promise<void> {
  for (const pid of await pidsMarked(marker)) {
    for (const target of [-pid, pid]) {
      try {
        process.kill(target, "SIGKILL");
      } catch {
        // not a group leader, or gone
      }
    }
  }
}
