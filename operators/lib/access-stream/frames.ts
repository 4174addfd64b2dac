// The framing of an access session (shell or exec) between the hub and the agent that runs it:
// one tunnel stream carries input, output, resizes, signals and the exit status, so each frame
// says what it is. Frame: type (1 byte), payload length (4 bytes, big-endian), payload.
import type { Readable, Writable } from "node:stream";

export const FrameType = {
  /** hub -> agent: bytes for the program's input. */
  Stdin: 0,
  /** hub -> agent: the client will send no more input. */
  Eof: 1,
  /** hub -> agent: JSON {cols, rows}. */
  Resize: 2,
  /** hub -> agent: a signal name without SIG (INT, TERM, ...). */
  Signal: 3,
  /** agent -> hub: program output. */
  Stdout: 10,
  Stderr: 11,
  /** agent -> hub: JSON {code} or {signal}; the last frame. */
  Exit: 12,
} as const;
export type FrameType = (typeof FrameType)[keyof typeof FrameType];

export interface Frame {
  type: number;
  payload: Buffer;
}

/** Largest payload a peer may send: bounds what one frame can make the other side buffer. */
export const MAX_FRAME_PAYLOAD = 256 * 1024;
const HEADER = 5;

export function encodeFrame(type: FrameType, payload: Buffer | string = Buffer.alloc(0)): Buffer {
  const body = typeof payload === "string" ? Buffer.from(payload) : payload;
  const header = Buffer.allocUnsafe(HEADER);
  header.writeUInt8(type, 0);
  header.writeUInt32BE(body.length, 1);
  return Buffer.concat([header, body]);
}

/** Splits a byte stream into frames, holding at most one unfinished frame. */
export class FrameDecoder {
  #pending: Buffer = Buffer.alloc(0);

  /** The complete frames in `chunk`; throws on a frame larger than MAX_FRAME_PAYLOAD. */
  push(chunk: Buffer): Frame[] {
    let data = this.#pending.length > 0 ? Buffer.concat([this.#pending, chunk]) : chunk;
    const frames: Frame[] = [];
    while (data.length >= HEADER) {
      const length = data.readUInt32BE(1);
      if (length > MAX_FRAME_PAYLOAD) throw new Error(`an access frame of ${length} bytes is too large`);
      if (data.length < HEADER + length) break;
      frames.push({ type: data.readUInt8(0), payload: data.subarray(HEADER, HEADER + length) });
      data = data.subarray(HEADER + length);
    }
    this.#pending = data.length > 0 ? Buffer.from(data) : Buffer.alloc(0);
    return frames;
  }
}

/**
 * Copies `source` into `sink` as frames of `type`, pausing the source while the sink is full:
 * a slow reader holds back its own writer and nobody else.
 */
export function pumpAsFrames(
  source: Readable,
  sink: Writable,
  type: FrameType,
  onBytes: (n: number) => void = () => {},
): void {
  source.on("data", (chunk: Buffer) => {
    onBytes(chunk.length);
    for (let at = 0; at < chunk.length; at += MAX_FRAME_PAYLOAD) {
      if (!sink.write(encodeFrame(type, chunk.subarray(at, at + MAX_FRAME_PAYLOAD)))) {
        source.pause();
        sink.once("drain", () => source.resume());
      }
    }
  });
}

/** The JSON of an Exit frame. */
export interface ExitStatus {
  code?: number;
  signal?: string;
}

export function parseExit(payload: Buffer): ExitStatus {
  try {
    const value = JSON.parse(payload.toString("utf8")) as { code?: unknown; signal?: unknown };
    return {
      ...(typeof value.code === "number" ? { code: value.code } : {}),
      ...(typeof value.signal === "string" ? { signal: value.signal } : {}),
    };
  } catch {
    return { code: 255 };
  }
}

export function parseResize(payload: Buffer): { cols: number; rows: number } | undefined {
  try {
    const value = JSON.parse(payload.toString("utf8")) as { cols?: unknown; rows?: unknown };
    const cols = Number(value.cols);
    const rows = Number(value.rows);
    if (!Number.isInteger(cols) || !Number.isInteger(rows) || cols < 1 || rows < 1) return undefined;
    return { cols: Math.min(cols, 10_000), rows: Math.min(rows, 10_000) };
  } catch {
    return undefined;
  }
}
