// A bounded buffer of output lines, for a status tail and for followers. Bounded twice: at most
// `maxLines` lines of at most `maxLineBytes` characters each. Lines carry a sequence number, so a
// follower that fell behind the buffer knows how many it missed instead of blocking the writer.

export interface LogLine {
  seq: number;
  /** RFC 3339. */
  time: string;
  /** Which process wrote it (roscore, roslaunch, ffmpeg). */
  process: string;
  stream: "stdout" | "stderr";
  text: string;
}

export interface LogRingOptions {
  maxLines: number;
  maxLineBytes: number;
  now?: () => Date;
}

export class LogRing {
  readonly #lines: LogLine[] = [];
  readonly #options: LogRingOptions;
  readonly #listeners = new Set<() => void>();
  #next = 1;

  constructor(options: LogRingOptions) {
    this.#options = options;
  }

  push(process: string, stream: LogLine["stream"], text: string): void {
    const max = this.#options.maxLineBytes;
    const line: LogLine = {
      seq: this.#next++,
      time: (this.#options.now?.() ?? new Date()).toISOString(),
      process,
      stream,
      text: text.length > max ? `${text.slice(0, max)}…[truncated]` : text,
    };
    this.#lines.push(line);
    if (this.#lines.length > this.#options.maxLines)
      this.#lines.splice(0, this.#lines.length - this.#options.maxLines);
    for (const listener of this.#listeners) listener();
  }

  /** The last `n` lines. */
  tail(n: number): LogLine[] {
    return n <= 0 ? [] : this.#lines.slice(-n);
  }

  /** Lines with seq >= `from`, and how many before them were already dropped. */
  since(from: number): { lines: LogLine[]; dropped: number } {
    const first = this.#lines[0]?.seq ?? this.#next;
    const dropped = Math.max(0, first - from);
    return { lines: this.#lines.filter((l) => l.seq >= from), dropped };
  }

  /** The sequence number the next line will get. */
  get nextSeq(): number {
    return this.#next;
  }

  /** Calls `listener` after each new line; returns the unsubscribe. */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}

/**
 * Splits a byte stream into lines for `onLine`; a line longer than `maxLineBytes` is cut there, so
 * a process writing without newlines cannot grow the pending buffer without bound.
 */
export function lineSplitter(maxLineBytes: number, onLine: (line: string) => void): (chunk: Buffer) => void {
  let pending = "";
  return (chunk) => {
    pending += chunk.toString("utf8");
    let newline = pending.indexOf("\n");
    while (newline >= 0) {
      onLine(pending.slice(0, newline).replace(/\r$/, ""));
      pending = pending.slice(newline + 1);
      newline = pending.indexOf("\n");
    }
    while (pending.length > maxLineBytes) {
      onLine(pending.slice(0, maxLineBytes));
      pending = pending.slice(maxLineBytes);
    }
  };
}
