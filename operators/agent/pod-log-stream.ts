// The `logs` stream purpose: one pod's output, streamed back over the tunnel as the runtime reads
// it. The hub has validated the request; the agent checks the bounds again (it is the last stop
// before a file or the cluster's API) and refuses what it cannot serve before answering `ok`.
import { Duplex, Writable } from "node:stream";
import type { StreamHandler } from "../lib/tunnel/index.ts";
import type { LogStreamOptions, Runtime } from "./runtimes/types.ts";

/** Longest tail a stream hands out, so one request cannot pull a whole log file through the hub. */
export const MAX_LOG_LINES = 10_000;

function positiveInteger(value: unknown, field: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0)
    throw new Error(`${field} must be a non-negative integer`);
  return value;
}

/** The request's options, from the hub's stream header. */
export function logStreamOptions(meta: Record<string, unknown>): LogStreamOptions {
  const tail = positiveInteger(meta.tail, "tail");
  const limitBytes = positiveInteger(meta.limitBytes, "limitBytes");
  const sinceSeconds = positiveInteger(meta.sinceSeconds, "sinceSeconds");
  const container = meta.container;
  if (container !== undefined && typeof container !== "string") throw new Error("container must be a string");
  return {
    tail: Math.min(tail ?? 100, MAX_LOG_LINES),
    ...(limitBytes === undefined ? {} : { limitBytes }),
    ...(sinceSeconds === undefined ? {} : { sinceSeconds }),
    ...(meta.follow === true ? { follow: true } : {}),
    ...(meta.previous === true ? { previous: true } : {}),
    ...(meta.timestamps === true ? { timestamps: true } : {}),
    ...(container ? { container } : {}),
  };
}

export function podLogStream(runtime: Runtime): StreamHandler {
  return async (meta) => {
    const name = typeof meta.name === "string" ? meta.name : "";
    const namespace = typeof meta.namespace === "string" ? meta.namespace : "";
    if (!name) throw new Error("a logs stream needs the pod's name");
    const readable = await runtime.logStream({ namespace, name }, logStreamOptions(meta));
    // The hub sends nothing after its header; anything it does send is dropped.
    return Duplex.from({
      readable,
      writable: new Writable({ write: (_chunk, _encoding, done) => done() }),
    });
  };
}
