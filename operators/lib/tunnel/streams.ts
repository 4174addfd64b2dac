import type { Duplex } from "node:stream";
import { encodeLine, readLine } from "./ndjson.ts";

/** Opens the agent-side end of a stream the hub asked for; resolves once it is connected. */
export type StreamHandler = (meta: Record<string, unknown>) => Promise<Duplex>;

export const STREAM_HEADER_LIMIT = 64 * 1024;

/**
 * Fields a handler's target adds to the agent's `{ok: true}` answer (as `target[STREAM_ANSWER]`),
 * which the hub's openStream puts on the stream it resolves with: e.g. `{hop: true}`, the forward
 * carried by the agent's byte hop instead of this stream (ADR 0011).
 */
export const STREAM_ANSWER: unique symbol = Symbol("rlark stream answer");

/** The extra fields of the agent's answer to the stream `stream` (empty when none). */
export function streamAnswer(stream: Duplex): Record<string, unknown> {
  return (stream as Duplex & { [STREAM_ANSWER]?: Record<string, unknown> })[STREAM_ANSWER] ?? {};
}

/**
 * A handler's refusal by its own rule (a port the pod does not hold), as opposed to a failure to
 * open: the answer says so, and the hub's openStream rejects with this class again, so the hub
 * can audit it as refused.
 */
export class StreamRefused extends Error {
  override name = "StreamRefused";
}

function parseHeader(line: string): { purpose: string; meta: Record<string, unknown> } {
  const header = JSON.parse(line) as { purpose?: unknown; meta?: unknown };
  const purpose = typeof header?.purpose === "string" ? header.purpose : "";
  const meta =
    typeof header?.meta === "object" && header.meta !== null ? (header.meta as Record<string, unknown>) : {};
  return { purpose, meta };
}

/**
 * Agent side of a stream channel: reads the hub's one-line header `{purpose, meta}`, opens the
 * target through the handler for that purpose, answers `{ok}` and then pipes bytes both ways.
 */
export async function serveStream(channel: Duplex, handlers: Record<string, StreamHandler>): Promise<void> {
  const refuse = (error: string, refused = false) => {
    channel.end(encodeLine({ ok: false, error, ...(refused ? { refused } : {}) }));
  };
  let header: { purpose: string; meta: Record<string, unknown> };
  try {
    header = parseHeader(await readLine(channel, STREAM_HEADER_LIMIT));
  } catch (err) {
    refuse(`bad stream header: ${(err as Error).message}`);
    return;
  }
  const handler = Object.hasOwn(handlers, header.purpose) ? handlers[header.purpose] : undefined;
  if (!handler) {
    refuse(`this agent serves no ${JSON.stringify(header.purpose)} streams`);
    return;
  }
  // The hub may give up while the target opens (its client left): then the target must not
  // outlive it (a shell would run on with nobody attached).
  let gone = false;
  const leave = () => {
    gone = true;
  };
  channel.once("close", leave);
  let target: Duplex;
  try {
    target = await handler(header.meta);
  } catch (err) {
    channel.off("close", leave);
    refuse((err as Error).message, err instanceof StreamRefused);
    return;
  }
  channel.off("close", leave);
  if (gone || channel.destroyed) {
    target.destroy();
    return;
  }
  channel.write(encodeLine({ ...streamAnswer(target), ok: true }));
  channel.pipe(target).pipe(channel);
  await new Promise<void>((resolve) => {
    const done = () => {
      target.destroy();
      channel.destroy();
      resolve();
    };
    // After a clean end the channel may still hold bytes waiting for the hub's window:
    // destroying it now would drop them, so it goes once they are all written.
    target.once("close", () => {
      if (channel.writableEnded && !channel.writableFinished) channel.once("finish", done);
      else done();
    });
    channel.once("close", done);
    target.once("error", done);
    channel.once("error", done);
  });
}
