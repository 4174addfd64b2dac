// Joins two byte streams both ways with half-close: each side's end ends the other's writable
// side, an error on either destroys both, and `onBytes` sees every chunk (direction, size).

import type { Duplex } from "node:stream";

const reset = (side: Duplex) => side.errored !== null || ((side as { rstCode?: number }).rstCode ?? 0) !== 0;

export function splice(
  a: Duplex,
  b: Duplex,
  onBytes?: (fromA: boolean, n: number) => void,
  onClose?: () => void,
): void {
  let closed = 0;
  const closeOne = () => {
    if (++closed === 2) onClose?.();
  };
  const fail = () => {
    a.destroy();
    b.destroy();
  };
  a.on("error", fail);
  b.on("error", fail);
  a.once("close", closeOne);
  b.once("close", closeOne);
  // A side that closes with its ends sent and received leaves the other to flush what it still
  // has to write. A side that was reset (an HTTP/2 stream whose session's socket died still emits
  // "end", then closes with a non-zero rstCode) takes the other with it: waiting for the other's
  // end hangs when its peer is blocked writing and never sends one.
  // Cut off, the other side is reset in turn (with an error: an HTTP/2 stream then sends a
  // non-zero RST_STREAM, so the reset crosses the hub instead of reading as a clean end).
  const cut = new Error("the other side of the stream was reset");
  a.once("close", () => b.destroyed || (!reset(a) && b.writableEnded) || b.destroy(cut));
  b.once("close", () => a.destroyed || (!reset(b) && a.writableEnded) || a.destroy(cut));
  if (onBytes) {
    a.on("data", (chunk: Buffer) => onBytes(true, chunk.length));
    b.on("data", (chunk: Buffer) => onBytes(false, chunk.length));
  }
  a.pipe(b);
  b.pipe(a);
  a.resume();
  b.resume();
}
