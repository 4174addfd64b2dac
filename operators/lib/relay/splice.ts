// Joins two byte streams both ways with half-close: each side's end ends the other's writable
// side, an error on either destroys both, and `onBytes` sees every chunk (direction, size).

import type { Duplex } from "node:stream";

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
  // Once one side is closed, what the other still has to read can go nowhere: unless it has
  // ended too (a clean half-close both ways, only its writes left to flush), it goes. Waiting for
  // its end instead hangs when the side died mid-stream (an HTTP/2 stream whose session's socket
  // went still emits "end") and the other's peer, blocked writing, never sends its own.
  a.once("close", () => b.readableEnded || b.destroy());
  b.once("close", () => a.readableEnded || a.destroy());
  if (onBytes) {
    a.on("data", (chunk: Buffer) => onBytes(true, chunk.length));
    b.on("data", (chunk: Buffer) => onBytes(false, chunk.length));
  }
  a.pipe(b);
  b.pipe(a);
  a.resume();
  b.resume();
}
