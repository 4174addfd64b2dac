import type { Readable } from "node:stream";

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

/**
 * Reads one line off a stream in paused mode and leaves everything after it unread, so the
 * stream can afterwards be piped or listened to as raw bytes (a stream channel's header).
 */
export function readLine(stream: Readable, maxLineBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let length = 0;
    const cleanup = () => {
      stream.off("readable", onReadable);
      stream.off("end", onEnd);
      stream.off("close", onEnd);
      stream.off("error", onError);
    };
    const onReadable = () => {
      for (;;) {
        const chunk = stream.read() as Buffer | null;
        if (chunk === null) return;
        const nl = chunk.indexOf(0x0a);
        length += nl === -1 ? chunk.length : nl;
        if (length > maxLineBytes) {
          cleanup();
          reject(new LineTooLongError(maxLineBytes));
          return;
        }
        if (nl === -1) {
          parts.push(chunk);
          continue;
        }
        parts.push(chunk.subarray(0, nl));
        cleanup();
        const rest = chunk.subarray(nl + 1);
        if (rest.length > 0) stream.unshift(rest);
        resolve(Buffer.concat(parts).toString("utf8"));
        return;
      }
    };
    const onEnd = () => {
      cleanup();
      reject(new Error("the stream ended before a whole line"));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    stream.on("readable", onReadable);
    stream.once("end", onEnd);
    stream.once("close", onEnd);
    stream.once("error", onError);
  });
}
