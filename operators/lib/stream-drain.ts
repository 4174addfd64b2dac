import type { EventEmitter } from "node:events";

/**
 * Calls `go` once, when `stream` can take more ("drain") or never will ("close"): a writer that
 * waited only for "drain" would wait for ever on a stream that closed while it was full.
 */
export function whenDrainedOrClosed(stream: EventEmitter, go: () => void): void {
  const wake = () => {
    stream.off("drain", wake);
    stream.off("close", wake);
    go();
  };
  stream.on("drain", wake);
  stream.on("close", wake);
}
