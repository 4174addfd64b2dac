// The bastion's byte relay between a user's channel (ssh2's, or the Go SSH front's data
// connection) and a pod's agent stream.
import type { Readable, Writable } from "node:stream";
import { PauseReasons } from "./byte-rate.ts";

/**
 * Copies bytes with backpressure: a slow reader pauses its own writer, nobody else. `count` says
 * how long the user's byte rate holds the writer after each chunk.
 */
export function relayBytes(
  from: Readable,
  to: Writable,
  count: (n: number) => number,
  beforeEnd = () => {},
): void {
  const holds = new PauseReasons(from);
  from.on("data", (chunk: Buffer) => {
    const wait = count(chunk.length);
    if (!to.write(chunk)) to.once("drain", holds.hold());
    holds.holdFor(wait);
  });
  from.on("end", () => {
    beforeEnd();
    to.end();
  });
}
