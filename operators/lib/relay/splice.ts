// Joins two byte streams both ways with half-close: each side's end ends the other's writable
// side, an error on either destroys both (or, with `drainMs`, half-closes and drains the other
// before it resets it), and `onBytes` sees every chunk (direction, size).

import { Socket } from "node:net";
import type { Duplex } from "node:stream";

export interface SpliceOptions {
  /**
   * A side broken by an error (a reset) does not take the other down at once, which would drop
   * what was just written to it and not yet sent (the broken side's last bytes, a refusal among
   * them): the other is half-closed, so they arrive followed by an end, and read (dropped) until
   * its own end, for this long at most; then it is reset. The hub's relay joins this way, as
   * rlark-net relay does.
   */
  drainMs?: number;
}

export function splice(
  a: Duplex,
  b: Duplex,
  onBytes?: (fromA: boolean, n: number) => void,
  onClose?: () => void,
  options: SpliceOptions = {},
): void {
  let closed = 0;
  const closeOne = () => {
    if (++closed === 2) onClose?.();
  };
  const fail = () => {
    a.destroy();
    b.destroy();
  };
  const cut = new Error("the other side of the stream was reset");
  const drainMs = options.drainMs;
  const drainThenReset = (to: Duplex) => {
    if (to.destroyed || drainMs === undefined) return void to.destroy(cut);
    to.unpipe();
    to.on("data", () => {});
    to.resume();
    if (!to.writableEnded) to.end();
    const timer = setTimeout(() => {
      if (to instanceof Socket) to.resetAndDestroy();
      else to.destroy(cut);
    }, drainMs);
    to.once("close", () => clearTimeout(timer));
    // Its own end after ours: a clean close once what it was sent has left.
    to.once("end", () => (to.writableFinished ? to.destroy() : to.once("finish", () => to.destroy())));
  };
  const broken = (dead: Duplex, other: Duplex) => {
    if (drainMs === undefined) return fail();
    dead.destroy();
    drainThenReset(other);
  };
  a.on("error", () => broken(a, b));
  b.on("error", () => broken(b, a));
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
  // error takes the other with it, reset in turn (after its drain, with `drainMs`).
  const afterClose = (from: Duplex, to: Duplex) => {
    if (to.destroyed) return;
    if (from.errored !== null || !to.writableEnded) return drainThenReset(to);
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
