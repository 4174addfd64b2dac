// What the device controller tests check about processes: which ones a test's marker still finds,
// and whether any child of this test process was left a zombie.
import { readdirSync, readFileSync } from "node:fs";

export { pidsMarked } from "../helpers/marked-processes.ts";

/** Pids of this process's children that have exited but were not reaped. */
export function zombieChildren(): number[] {
  const zombies: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue;
    }
    // pid (comm) state ppid …: comm may hold spaces and parentheses, so split after the last ')'.
    const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (state === "Z" && Number(ppid) === process.pid) zombies.push(Number(entry));
  }
  return zombies;
}
