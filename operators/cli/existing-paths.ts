import { existsSync } from "node:fs";
import path from "node:path";
import { usageError } from "./cli-error.ts";

/**
 * Refuses, before any work, paths that do not exist: one line each, naming the path as the user
 * typed it (not as resolved against the working directory).
 */
export function requireExistingPaths(paths: readonly string[], cwd: string): void {
  const missing = paths.filter((given) => !existsSync(path.resolve(cwd, given)));
  if (missing.length > 0)
    throw usageError(missing.map((given) => `${given}: no such file or directory`).join("\n"));
}
