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
  // A peer that closes before ending cleanly must not leave the other side half open.
  a.once("close", () => b.destroyed || b.writableEnded || b.destroy());
  b.once("close", () => a.destroyed || a.writableEnded || a.destroy());
  if (onBytes) {
    a.on("data", (chunk: Buffer) => onBytes(true, chunk.length));
    b.on("data", (chunk: Buffer) => onBytes(false, chunk.length));
  }
  a.pipe(b);
  b.pipe(a);
  a.resume();
  b.resume();
}
