import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

/** Writes through a temporary file and a rename, so a crash never leaves half a key behind. */
export function writeFileAtomic(path: string, data: string, mode: number): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${randomBytes(6).toString("hex")}.tmp`;
  writeFileSync(tmp, data, { mode });
  // The umask may have narrowed or the file may pre-exist: set the mode explicitly.
  chmodSync(tmp, mode);
  renameSync(tmp, path);
}
