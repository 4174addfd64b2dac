// Per-pod output files. The process writes straight to `output.log` (opened O_APPEND), never
// through a pipe to the agent: a pipe would break, and kill the process with SIGPIPE, the
// moment the agent restarts. Rotation is therefore copy-then-truncate (logrotate's
// copytruncate): the writer keeps its descriptor and, appending, continues at the new end.
import { copyFileSync, readFileSync, renameSync, statSync, truncateSync, unlinkSync } from "node:fs";

export interface LogRotation {
  /** Rotate once the live file exceeds this many bytes. */
  maxBytes: number;
  /** Rotated files kept next to the live one: output.log.1 (newest) ... output.log.<keep>. */
  keep: number;
}

function sizeOf(path: string): number | undefined {
  try {
    return statSync(path).size;
  } catch {
    return undefined;
  }
}

/** Rotates `path` when it has grown past the limit. Returns true when it rotated. */
export function rotateIfLarge(path: string, rotation: LogRotation): boolean {
  const size = sizeOf(path);
  if (size === undefined || size <= rotation.maxBytes) return false;
  if (rotation.keep < 1) {
    truncateSync(path, 0);
    return true;
  }
  try {
    unlinkSync(`${path}.${rotation.keep}`);
  } catch {
    // Not there yet.
  }
  for (let i = rotation.keep - 1; i >= 1; i--) {
    try {
      renameSync(`${path}.${i}`, `${path}.${i + 1}`);
    } catch {
      // A gap in the sequence: nothing to shift.
    }
  }
  copyFileSync(path, `${path}.1`);
  truncateSync(path, 0);
  return true;
}

/** The last `tail` lines across the live file and its rotations, oldest first; all of it without `tail`. */
export function readLog(path: string, keep: number, tail?: number): string {
  const chunks: string[] = [];
  let lines = 0;
  // Newest first, stopping as soon as enough lines are collected.
  for (let i = 0; i <= keep; i++) {
    let text: string;
    try {
      text = readFileSync(i === 0 ? path : `${path}.${i}`, "utf8");
    } catch {
      continue;
    }
    chunks.unshift(text);
    lines += countLines(text);
    if (tail !== undefined && lines > tail) break;
  }
  const all = chunks.join("");
  if (tail === undefined) return all;
  if (tail <= 0) return "";
  const parts = all.split("\n");
  const trailingNewline = all.endsWith("\n");
  if (trailingNewline) parts.pop();
  const kept = parts.slice(-tail).join("\n");
  return trailingNewline && kept ? `${kept}\n` : kept;
}

function countLines(text: string): number {
  let n = 0;
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) n++;
  return n;
}
