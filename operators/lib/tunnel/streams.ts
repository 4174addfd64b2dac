import type { Duplex } from "node:stream";
import { type DataLinkOffer, parseDataLinkOffer } from "./data-link.ts";
import { encodeLine, readLine } from "./ndjson.ts";

/** Opens the agent-side end of a stream the hub asked for; resolves once it is connected. */
export type StreamHandler = (meta: Record<string, unknown>) => Promise<Duplex>;

export const STREAM_HEADER_LIMIT = 64 * 1024;

/** Dials the hub's data endpoint for an offered ticket (TunnelClient: dialDataLink). */
export type DataLinkDialer = (offer: DataLinkOffer) => Promise<Duplex>;

interface StreamHeader {
  purpose: string;
  meta: Record<string, unknown>;
  link: DataLinkOffer | undefined;
}

function parseHeader(line: string): StreamHeader {
  const header = JSON.parse(line) as { purpose?: unknown; meta?: unknown; link?: unknown };
  const purpose = typeof header?.purpose === "string" ? header.purpose : "";
  const meta =
    typeof header?.meta === "object" && header.meta !== null ? (header.meta as Record<string, unknown>) : {};
  return { purpose, meta, link: parseDataLinkOffer(header?.link) };
}

/**
 * Agent side of a stream channel: reads the hub's one-line header `{purpose, meta}`, opens the
 * target through the handler for that purpose, answers `{ok}` and then pipes bytes both ways.
 * When the header offers a data link and `dial` connects it, the bytes take that connection
 * instead (answer `{ok, link: true}`); when it does not, they stay on the channel.
 */
export async function serveStream(
  channel: Duplex,
  handlers: Record<string, StreamHandler>,
  dial?: DataLinkDialer,
  onLinkFailure?: (error: Error) => void,
): Promise<void> {
  const refuse = (error: string) => {
    channel.end(encodeLine({ ok: false, error }));
  };
  let header: StreamHeader;
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
    refuse((err as Error).message);
    return;
  }
  channel.off("close", leave);
  if (gone || channel.destroyed) {
    target.destroy();
    return;
  }
  let carrier = channel;
  if (header.link && dial) {
    try {
      carrier = await dial(header.link);
    } catch (err) {
      onLinkFailure?.(err as Error);
    }
    if (channel.destroyed) {
      target.destroy();
      if (carrier !== channel) carrier.destroy();
      return;
    }
  }
  if (carrier !== channel) {
    // The channel only carried the request: from here the hub reads the data connection.
    channel.end(encodeLine({ ok: true, link: true }));
    channel.on("error", () => {});
    await pipeBoth(target, carrier);
    return;
  }
  channel.write(encodeLine({ ok: true }));
  await pipeBoth(target, channel);
}

/** Pipes the target and its carrier both ways until either closes. */
async function pipeBoth(target: Duplex, carrier: Duplex): Promise<void> {
  carrier.pipe(target).pipe(carrier);
  await new Promise<void>((resolve) => {
    const done = () => {
      target.destroy();
      carrier.destroy();
      resolve();
    };
    // After a clean end the carrier may still hold bytes waiting for the hub's window:
    // destroying it now would drop them, so it goes once they are all written.
    target.once("close", () => {
      if (carrier.writableEnded && !carrier.writableFinished) carrier.once("finish", done);
      else done();
    });
    carrier.once("close", done);
    target.once("error", done);
    carrier.once("error", done);
  });
}
