// Headers across the proxy: hop-by-hop ones (RFC 9110 §7.6.1, and whatever Connection names) are
// the hub's business with its client, not the pod's; the hub's credentials never reach a pod.
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http";

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/** What the hub's client proved itself with: for the hub, not for the pod. */
const CREDENTIALS = new Set(["authorization", "cookie"]);

function named(connection: string | string[] | undefined): Set<string> {
  const values = Array.isArray(connection) ? connection : connection ? [connection] : [];
  return new Set(
    values
      .flatMap((v) => v.split(","))
      .map((v) => v.trim().toLowerCase())
      .filter(Boolean),
  );
}

/** The client's headers as the pod gets them. */
export function requestHeaders(
  headers: IncomingHttpHeaders,
  port: number,
  prefix: string,
): OutgoingHttpHeaders {
  const dropped = named(headers.connection);
  const out: OutgoingHttpHeaders = {};
  for (const [key, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(key) || CREDENTIALS.has(key) || dropped.has(key)) continue;
    if (key === "host" || key.startsWith("x-forwarded-")) continue;
    out[key] = value;
  }
  out.host = `127.0.0.1:${port}`;
  if (headers.host) out["x-forwarded-host"] = headers.host;
  out["x-forwarded-prefix"] = prefix;
  // One request per tunnel stream: the pod closes the connection when it has answered.
  out.connection = "close";
  return out;
}

/** The pod's response headers as the client gets them; a Location on the pod's root moves under the prefix. */
export function responseHeaders(headers: IncomingHttpHeaders, prefix: string): OutgoingHttpHeaders {
  const dropped = named(headers.connection);
  const out: OutgoingHttpHeaders = {};
  for (const [key, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(key) || dropped.has(key)) continue;
    out[key] = value;
  }
  const location = headers.location;
  if (typeof location === "string" && location.startsWith("/") && !location.startsWith("//"))
    out.location = `${prefix}${location}`;
  return out;
}
