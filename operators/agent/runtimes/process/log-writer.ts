// The writing side of a pod's output: a size-bounded pair of files, `output.log` (live) and
// `output.log.1` (the one before), so a pod never holds more than 2 × maxBytes on disk however
// fast it writes. Run in a process of its own by log-writer-main.ts (see there for why).
import { closeSync, fstatSync, openSync, renameSync, statSync, truncateSync, writeSync } from "node:fs";

export class RotatingLog {
  readonly #path: string;
  readonly #maxBytes: number;
  #fd: number | undefined;
  #size = 0;

  constructor(path: string, maxBytes: number) {
    if (!Number.isInteger(maxBytes) || maxBytes < 1)
      throw new Error(`maxBytes must be a positive integer, not ${maxBytes}`);
    this.#path = path;
    this.#maxBytes = maxBytes;
  }

  /** Appends `chunk`, moving the live file to `.1` each time it reaches the limit (a line may be cut there). */
  write(chunk: Uint8Array): void {
    let offset = 0;
    while (offset < chunk.length) {
      const fd = this.#open();
      if (this.#size >= this.#maxBytes) {
        this.#rotate();
        continue;
      }
      const length = Math.min(chunk.length - offset, this.#maxBytes - this.#size);
      const written = writeSync(fd, chunk, offset, length);
      offset += written;
      this.#size += written;
    }
  }

  close(): void {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }

  #open(): number {
    if (this.#fd === undefined) {
      this.#fd = openSync(this.#path, "a", 0o600);
      // An earlier run's output carries on in the same file.
      this.#size = fstatSync(this.#fd).size;
    }
    return this.#fd;
  }

  #rotate(): void {
    this.close();
    renameSync(this.#path, `${this.#path}.1`);
  }
}

/** Empties a previous file over the limit (an older agent's), so the bound holds from the first byte. */
export function trimOversized(path: string, maxBytes: number): void {
  for (const file of [path, `${path}.1`]) {
    try {
      if (statSync(file).size > maxBytes) truncateSync(file, 0);
    } catch {
      // Not there.
    }
  }
}
