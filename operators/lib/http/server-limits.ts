// The HTTP port's limits (issue 31 item 11). Node holds every connection it accepts, for as long as
// a client trickles its headers (60 s by default, checked only every 30 s): a few thousand
// half-sent requests from one address could take every file descriptor. So: a cap on connections
// per client address and in all, and header, request and keep-alive timeouts checked every second.
// None of them touches a long-lived answer: the request timeout ends when the request has been
// read (for an event stream or a WebSocket, at the end of its headers), not when the answer ends.
import type { Server, ServerOptions } from "node:http";

export interface HttpServerLimits {
  /** Open connections in all (streams and WebSockets included); more are closed at once. */
  maxConnections: number;
  /** Open connections from one client address; more from it are closed at once. */
  maxConnectionsPerAddress: number;
  /** Time a client has to send a request's headers. */
  headersTimeoutMs: number;
  /** Time a client has to send a whole request, body included (uploads through the pod proxy). */
  requestTimeoutMs: number;
  /** How long an idle keep-alive connection is kept for the client's next request. */
  keepAliveTimeoutMs: number;
}

export const DEFAULT_HTTP_LIMITS: HttpServerLimits = {
  maxConnections: 1024,
  // A browser opens about 6 connections to a host: this leaves room for an office behind one NAT.
  maxConnectionsPerAddress: 256,
  headersTimeoutMs: 20_000,
  requestTimeoutMs: 5 * 60_000,
  keepAliveTimeoutMs: 5_000,
};

/** The limits with `given` over the defaults; throws naming a limit that cannot work. */
export function httpServerLimits(given: Partial<HttpServerLimits> = {}): HttpServerLimits {
  const limits = { ...DEFAULT_HTTP_LIMITS, ...given };
  for (const [name, value] of Object.entries(limits))
    if (!Number.isInteger(value) || value < 1)
      throw new Error(`HTTP limit ${name}: expected a whole number above 0`);
  if (limits.headersTimeoutMs > limits.requestTimeoutMs)
    throw new Error(
      `HTTP limits: the header timeout (${limits.headersTimeoutMs} ms) is longer than the request timeout (${limits.requestTimeoutMs} ms)`,
    );
  return limits;
}

/** createServer's options for `limits`. */
export function serverOptions(limits: HttpServerLimits): ServerOptions {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // Node's default of 30 s would let a header timeout of 20 s hold for 50 s.
    connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
  };
}

/** Caps `server`'s connections in all (Node's own check) and per client address (ours). */
export function limitConnections(server: Server, limits: HttpServerLimits): void {
  server.maxConnections = limits.maxConnections;
  const perAddress = new Map<string, number>();
  // Before the HTTP server's own listener: a refused socket never gets a parser.
  server.prependListener("connection", (socket) => {
    const address = socket.remoteAddress ?? "";
    const open = perAddress.get(address) ?? 0;
    if (open >= limits.maxConnectionsPerAddress) {
      socket.destroy();
      return;
    }
    perAddress.set(address, open + 1);
    socket.once("close", () => {
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left > 0) perAddress.set(address, left);
      else perAddress.delete(address);
    });
  });
}
