import { connect as netConnect } from "node:net";
import type { Duplex } from "node:stream";
import { encodeLine, LineSplitter } from "./ndjson.ts";

/** Opens the agent-side end of a stream the hub asked for; resolves once it is connected. */
export type StreamHandler = (meta: Record<string, unknown>) => Promise<Duplex>;

const HEADER_LIMIT = 64 * 1024;

/** The `kube-api` purpose: a raw TCP pipe to the local API server (or anything at `target`). */
export function tcpStreamHandler(target: { host: string; port: number }): StreamHandler {
  return () =>
    new Promise((resolve, reject) => {
      const socket = netConnect(target);
      socket.setNoDelay(true);
      socket.once("connect", () => {
        socket.off("error", reject);
        resolve(socket);
      });
      socket.once("error", reject);
    });
}

/**
 * Agent side of a stream channel: reads the hub's one-line header `{purpose, meta}`, opens the
 * target through the handler for that purpose, answers `{ok}` and then pipes bytes both ways.
 */
export function serveStream(channel: Duplex, handlers: Record<string, StreamHandler>): Promise<void> {
  return new Promise((resolve) => {
    const splitter = new LineSplitter(HEADER_LIMIT);
    const refuse = (error: string) => {
      channel.end(encodeLine({ ok: false, error }));
      resolve();
    };
    const onData = (chunk: Buffer) => {
      const nl = chunk.indexOf(0x0a);
      let lines: string[];
      try {
        lines = splitter.push(nl === -1 ? chunk : chunk.subarray(0, nl + 1));
      } catch {
        channel.off("data", onData);
        refuse("stream header too long");
        return;
      }
      if (nl === -1) return;
      channel.pause();
      channel.off("data", onData);
      const rest = chunk.subarray(nl + 1);
      if (rest.length > 0) channel.unshift(rest);
      let header: { purpose?: unknown; meta?: unknown };
      try {
        header = JSON.parse(lines[0] ?? "") as { purpose?: unknown; meta?: unknown };
      } catch {
        refuse("stream header is not JSON");
        return;
      }
      const purpose = typeof header.purpose === "string" ? header.purpose : "";
      const handler = Object.hasOwn(handlers, purpose) ? handlers[purpose] : undefined;
      if (!handler) {
        refuse(`this agent serves no ${JSON.stringify(purpose)} streams`);
        return;
      }
      const meta =
        typeof header.meta === "object" && header.meta !== null
          ? (header.meta as Record<string, unknown>)
          : {};
      handler(meta).then(
        (target) => {
          channel.write(encodeLine({ ok: true }));
          channel.pipe(target).pipe(channel);
          const done = () => {
            target.destroy();
            channel.destroy();
            resolve();
          };
          target.once("close", done);
          channel.once("close", done);
          target.once("error", done);
          channel.once("error", done);
        },
        (err: Error) => refuse(err.message),
      );
    };
    channel.on("data", onData);
    channel.once("error", () => resolve());
  });
}
