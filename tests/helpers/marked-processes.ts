// Processes a test started, found by a marker it put in their command line, so that a test can
// count them, or kill what is left, without knowing how they were started.
import { readdir, readFile } from "node:fs/promises";

/** Pids of live processes whose command line holds `marker`, but not Node ones (the test's own). */
export async function pidsMarked(marker: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "");
    if (cmdline.includes(marker) && !cmdline.includes("node")) pids.push(Number(entry));
  }
  return pids;
}
