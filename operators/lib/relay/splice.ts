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
  // A side may have closed already while its caller awaited the other (a TLS socket whose
  // connection to the hub died right after its handshake): it would never say so again.
  for (const side of [a, b]) {
    if (side.closed) closeOne();
    else side.once("close", closeOne);
  }
  if (a.destroyed || b.destroyed) {
    fail();
    return;
  }
  // A side that closes after a clean end leaves the other to flush what it still has to write,
  // and reads on what the other still sends (it has nowhere to go): the other's peer may be
  // blocked writing to it and would otherwise never read the end it was sent (a TLS socket whose
  // connection to the hub died ends as cleanly as one whose peer ended). A side closed by an
  // error takes the other with it, reset in turn.
  const cut = new Error("the other side of the stream was reset");
  const afterClose = (from: Duplex, to: Duplex) => {
    if (to.destroyed) return;
    if (from.errored !== null || !to.writableEnded) return void to.destroy(cut);
    to.unpipe();
    to.on("data", () => {});
    to.resume();
  };
  a.once("close", () => afterClose(a, b));
  b.once("close", () => afterClose(b, a));
  if (onBytes) {
    a.on("data", (chunk: Buffer) => onBytes(true, chunk.length));
    b.on("data", (chunk: Buffer) => onBytes(false, chunk.length));
  }
  a.pipe(b);
  b.pipe(a);
  a.resume();
  b.resume();
}
