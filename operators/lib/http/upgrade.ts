// The hub's one WebSocket entrance (contract W): every upgrade request is checked here before any
// route may complete it. A browser's Origin must be one of the hub's own, scheme and port included
// (origin.ts: a page elsewhere cannot borrow a logged-in user's token or login cookie), and the request must carry a token the API accepts: in the
// Authorization header, or (browsers cannot set headers on a WebSocket) as a subprotocol
// `rlark.token.<token>`, which the answer never echoes. Refusals are plain HTTP answers on the
// raw socket; nothing is upgraded for a stranger.
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { type Authenticator, bearerToken, type Principal } from "./auth.ts";
import type { OriginCheck } from "./origin.ts";

export const TOKEN_PROTOCOL_PREFIX = "rlark.token.";

/** What a route gets once the request is authenticated; the route completes or refuses the upgrade. */
export interface UpgradeRequest {
  principal: Principal;
  url: URL;
  req: IncomingMessage;
  socket: Duplex;
  head: Buffer;
}

/** Answers the upgrade (true), or leaves it to the next route (false). */
export type UpgradeRoute = (request: UpgradeRequest) => boolean | Promise<boolean>;

export interface UpgradeOptions {
  authenticate: Authenticator;
  routes: UpgradeRoute[];
  /** Whether a browser's Origin is the hub's own (origin.ts). */
  sameOrigin: OriginCheck;
  /** A token the request carries some other way (a proxy login cookie), tried last. */
  fallbackToken?: (req: IncomingMessage, url: URL) => string | undefined;
}

/** The requested subprotocols, in order (Sec-WebSocket-Protocol is a comma-separated list). */
export function requestedProtocols(req: IncomingMessage): string[] {
  return (req.headers["sec-websocket-protocol"] ?? "")
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean);
}

/** The subprotocols a route may pass on or choose from: the token one removed. */
export function offeredProtocols(req: IncomingMessage): string[] {
  return requestedProtocols(req).filter((p) => !p.startsWith(TOKEN_PROTOCOL_PREFIX));
}

/** Refuses an upgrade with a plain HTTP answer and closes the socket. */
export function refuseUpgrade(socket: Duplex, status: number, reason: string, message: string): void {
  if (socket.destroyed) return;
  const body = `${JSON.stringify({ kind: "Status", status: "Failure", code: status, reason, message })}\n`;
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `connection: close\r\n\r\n${body}`,
  );
}

function tokenOf(req: IncomingMessage): string | undefined {
  const bearer = bearerToken(req);
  if (bearer) return bearer;
  const entry = requestedProtocols(req).find((p) => p.startsWith(TOKEN_PROTOCOL_PREFIX));
  return entry ? entry.slice(TOKEN_PROTOCOL_PREFIX.length) : undefined;
}

export function createUpgradeHandler(options: UpgradeOptions) {
  return (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on("error", () => {});
    void handle(options, req, socket, head).catch((error: unknown) => {
      refuseUpgrade(socket, 500, "Internal Server Error", "internal error");
      process.emitWarning(`hub upgrade: ${error instanceof Error ? error.message : String(error)}`);
    });
  };
}

async function handle(options: UpgradeOptions, req: IncomingMessage, socket: Duplex, head: Buffer) {
  if ((req.headers.upgrade ?? "").toLowerCase() !== "websocket")
    return refuseUpgrade(socket, 400, "Bad Request", "only WebSocket upgrades are served");
  if (!options.sameOrigin(req))
    return refuseUpgrade(socket, 403, "Forbidden", "a WebSocket from another origin is refused");
  const url = new URL(req.url ?? "/", "http://hub.invalid");
  const token = tokenOf(req) ?? options.fallbackToken?.(req, url);
  const principal = token ? await options.authenticate(token) : undefined;
  if (!principal)
    return refuseUpgrade(
      socket,
      401,
      "Unauthorized",
      "log in first: a token is required (Bearer or subprotocol)",
    );
  for (const route of options.routes) {
    if (await route({ principal, url, req, socket, head })) return;
  }
  refuseUpgrade(socket, 404, "Not Found", `no WebSocket route for ${url.pathname.slice(0, 200)}`);
}
