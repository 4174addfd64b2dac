// Disk full, for the fault matrix's "× disk full" cells: a small tmpfs of the test's own (unmounted
// at teardown), and a file that fills it to the last byte.
import { execFileSync } from "node:child_process";
import { mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Test } from "tap";

/** A fresh tmpfs of `size` (mount(8)'s form: "16m") mounted on a new temp dir. */
export async function smallTmpfs(t: Test, prefix: string, size = "16m"): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir]);
  t.teardown(async () => {
    execFileSync("umount", ["-l", dir]);
    await rm(dir, { recursive: true, force: true });
  });
  return dir;
}

/** Writes into `file` until the file system refuses even one byte (64 KiB blocks, then bytes). */
export async function fillToLastByte(file: string): Promise<void> {
  const handle = await open(file, "w");
  try {
    for (const size of [64 * 1024, 1])
      try {
        for (;;) await handle.write(Buffer.alloc(size, 1));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
      }
  } finally {
    await handle.close().catch(() => undefined);
  }
}
