// Request/response over a stream channel: the hub writes one JSON line, the agent answers with
// one JSON line and the stream ends. Both lines are bounded, and what arrives is `unknown` until
// the caller's parse function has checked it: the agent carries out the work with its own
// credentials and the hub never gets a byte stream into the cluster.
import { type Duplex, duplexPair } from "node:stream";
import { encodeLine, readLine } from "./ndjson.ts";
import type { StreamHandler } from "./streams.ts";

/** A Kubernetes object is at most ~1.5 MiB in etcd; a request carries one. */
export const DEFAULT_MAX_REQUEST_BYTES = 2 * 1024 * 1024;
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;

export interface RequestHandlerOptions {
  maxRequestBytes?: number;
  maxResponseBytes?: number;
}

/**
 * The agent's end: reads one request line, answers with what `handle` returns. A request that
 * is too long or not JSON, or a handler that throws, is answered with `{error}`.
 */
export function requestHandler(
  handle: (request: unknown) => Promise<unknown>,
  options: RequestHandlerOptions = {},
): StreamHandler {
  const maxRequest = options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
  const maxResponse = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  return async () => {
    const [toChannel, local] = duplexPair();
    // The hub hung up (timeout): nothing is left to answer.
    local.on("error", () => {});
    void (async () => {
      let answer: unknown;
      try {
        const request = JSON.parse(await readLine(local, maxRequest)) as unknown;
        answer = await handle(request);
      } catch (err) {
        answer = { error: (err as Error).message };
      }
      let line = encodeLine(answer);
      if (Buffer.byteLength(line) > maxResponse) {
        line = encodeLine({ error: `the answer is longer than ${maxResponse} bytes` });
      }
      if (!local.writableEnded && !toChannel.destroyed) local.end(line);
    })();
    return toChannel;
  };
}

export interface RequestOptions {
  maxResponseBytes?: number;
  timeoutMs?: number;
}

/** The hub's end: sends `request` on an open stream and returns the answer, unparsed. */
export async function requestOverStream(
  stream: Duplex,
  request: unknown,
  options: RequestOptions = {},
): Promise<unknown> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    stream.destroy();
  }, timeoutMs);
  try {
    stream.write(encodeLine(request));
    const line = await readLine(stream, options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES);
    return JSON.parse(line) as unknown;
  } catch (err) {
    if (timedOut) throw new Error(`no answer within ${timeoutMs} ms`);
    throw err;
  } finally {
    clearTimeout(timer);
    stream.destroy();
  }
}
