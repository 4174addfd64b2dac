import { EventEmitter } from "node:events";
import type { Duplex } from "node:stream";
import { encodeLine, LineSplitter } from "./ndjson.ts";

export interface MessageChannelOptions<In> {
  /** Validates one decoded JSON value; throws to reject it (and close the channel). */
  parse: (value: unknown) => In;
  maxLineBytes?: number;
  /**
   * Bytes we hold beyond what the stream accepted. Past it the queue is dropped and
   * 'overflow' is emitted: the owner resynchronises instead of buffering without bound.
   */
  maxQueuedBytes?: number;
}

interface Queued<Out> {
  message: Out;
  line: string;
}

export interface MessageChannelEvents<In> {
  message: [In];
  /** A malformed or over-long line; the channel is closed right after. */
  invalid: [Error];
  overflow: [];
  close: [];
}

export const DEFAULT_MAX_LINE_BYTES = 32 * 1024 * 1024;
export const DEFAULT_MAX_QUEUED_BYTES = 16 * 1024 * 1024;

/**
 * Newline-delimited JSON over an SSH channel (or any Duplex), honouring `write()` returning
 * false: nothing more is written until 'drain', and what waits is bounded.
 */
export class MessageChannel<In, Out> extends EventEmitter<MessageChannelEvents<In>> {
  #stream: Duplex;
  #parse: (value: unknown) => In;
  #splitter: LineSplitter;
  #maxQueued: number;
  #queue: Queued<Out>[] = [];
  #queuedBytes = 0;
  #blocked = false;
  #closed = false;

  constructor(stream: Duplex, options: MessageChannelOptions<In>) {
    super();
    this.#stream = stream;
    this.#parse = options.parse;
    this.#splitter = new LineSplitter(options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES);
    this.#maxQueued = options.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_BYTES;
    stream.on("data", (chunk: Buffer) => this.#onData(chunk));
    stream.on("drain", () => {
      this.#blocked = false;
      this.#pump();
    });
    const onGone = () => this.#finish();
    stream.on("close", onGone);
    stream.on("end", onGone);
    stream.on("error", onGone);
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Bytes waiting for the peer's window, beyond what the stream already took. */
  get queuedBytes(): number {
    return this.#queuedBytes;
  }

  /**
   * Queues a message. `supersedes` drops queued messages the new one makes obsolete (a
   * snapshot supersedes unsent deltas). Returns false when the channel is closed or the
   * queue overflowed and was dropped.
   */
  send(message: Out, supersedes?: (queued: Out) => boolean): boolean {
    if (this.#closed) return false;
    if (supersedes) {
      this.#queue = this.#queue.filter((q) => !supersedes(q.message));
      this.#queuedBytes = this.#queue.reduce((n, q) => n + Buffer.byteLength(q.line), 0);
    }
    const line = encodeLine(message);
    const bytes = Buffer.byteLength(line);
    // One message larger than the bound still goes (a big snapshot must); a backlog does not.
    if (this.#queue.length > 0 && this.#queuedBytes + bytes > this.#maxQueued) {
      this.#queue = [];
      this.#queuedBytes = 0;
      this.emit("overflow");
      return false;
    }
    this.#queue.push({ message, line });
    this.#queuedBytes += bytes;
    this.#pump();
    return true;
  }

  /** Stops reading: the peer's SSH window fills and its writes start returning false. */
  pause(): void {
    this.#stream.pause();
  }

  resume(): void {
    this.#stream.resume();
  }

  close(): void {
    if (this.#closed) return;
    this.#stream.end();
    this.#finish();
  }

  #pump(): void {
    while (!this.#blocked && !this.#closed && this.#queue.length > 0) {
      const next = this.#queue.shift()!;
      this.#queuedBytes -= Buffer.byteLength(next.line);
      if (!this.#stream.write(next.line)) this.#blocked = true;
    }
  }

  #onData(chunk: Buffer): void {
    if (this.#closed) return;
    let lines: string[];
    try {
      lines = this.#splitter.push(chunk);
    } catch (err) {
      this.#reject(err as Error);
      return;
    }
    for (const line of lines) {
      if (this.#closed) return;
      if (line.trim() === "") continue;
      let message: In;
      try {
        message = this.#parse(JSON.parse(line));
      } catch (err) {
        this.#reject(err as Error);
        return;
      }
      this.emit("message", message);
    }
  }

  #reject(err: Error): void {
    this.emit("invalid", err);
    this.#stream.destroy();
    this.#finish();
  }

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#queue = [];
    this.#queuedBytes = 0;
    this.emit("close");
  }
}
