/** A line longer than the limit: the peer is broken or hostile, the channel must close. */
export class LineTooLongError extends Error {
  constructor(limit: number) {
    super(`a message line exceeded ${limit} bytes`);
    this.name = "LineTooLongError";
  }
}

/**
 * Splits a byte stream into newline-terminated lines without ever holding more than
 * `maxLineBytes` of an unfinished line.
 */
export class LineSplitter {
  #max: number;
  #parts: Buffer[] = [];
  #length = 0;

  constructor(maxLineBytes: number) {
    this.#max = maxLineBytes;
  }

  /** Returns the complete lines in `chunk` (without their newline); throws LineTooLongError. */
  push(chunk: Buffer): string[] {
    const lines: string[] = [];
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      if (nl === -1) break;
      const piece = chunk.subarray(start, nl);
      if (this.#length + piece.length > this.#max) throw new LineTooLongError(this.#max);
      this.#parts.push(piece);
      lines.push(Buffer.concat(this.#parts).toString("utf8"));
      this.#parts = [];
      this.#length = 0;
      start = nl + 1;
    }
    const rest = chunk.subarray(start);
    if (rest.length > 0) {
      if (this.#length + rest.length > this.#max) throw new LineTooLongError(this.#max);
      // Copy: the caller's buffer may be reused.
      this.#parts.push(Buffer.from(rest));
      this.#length += rest.length;
    }
    return lines;
  }
}

export function encodeLine(message: unknown): string {
  return `${JSON.stringify(message)}\n`;
}
