// A number from a range that no other live process on this machine holds (an address block, a
// link range): test files run two at a time, and two random picks from the same range would
// collide now and then. A claim is a file created exclusively; one left by a process that died is
// taken over.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

const dir = path.join(tmpdir(), "rlark-test-claims");

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Claims a number in [from, to) for this process; `release` frees it (and exit frees it too). */
export function claimNumber(kind: string, from: number, to: number): { value: number; release(): void } {
  mkdirSync(dir, { recursive: true });
  const size = to - from;
  const start = Math.floor(Math.random() * size);
  for (let i = 0; i < size; i++) {
    const value = from + ((start + i) % size);
    const file = path.join(dir, `${kind}-${value}`);
    try {
      writeFileSync(file, String(process.pid), { flag: "wx" });
    } catch {
      const holder = Number(readFileSync(file, "utf8"));
      if (holder > 0 && alive(holder)) continue;
      // Left by a process that died: take it over (a race with another taker makes it skip).
      rmSync(file, { force: true });
      try {
        writeFileSync(file, String(process.pid), { flag: "wx" });
      } catch {
        continue;
      }
    }
    return { value, release: () => rmSync(file, { force: true }) };
  }
  throw new Error(`every ${kind} in ${from}-${to - 1} is claimed by a live process`);
}
