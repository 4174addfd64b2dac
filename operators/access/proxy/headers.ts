// Headers across the proxy: hop-by-hop ones (RFC 9110 §7.6.1, and whatever Connection names) are
// the hub's business with its client, not the pod's; the hub's credentials (its bearer token, its
// proxy login cookie) never reach a pod, while the pod's own cookies go back and forth.
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http";
import { PROXY_COOKIE } from "./proxy-login.ts";

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

/**
 * Answers that would reach past the pod's prefix into the hub's whole origin: a service worker
 * allowed a scope above its own path (it could then serve the dashboard's pages), or the origin's
 * storage and cookies cleared. A pod's page stays inside its prefix.
 */
const ORIGIN_WIDE = new Set(["service-worker-allowed", "clear-site-data"]);

/** What the hub's client proved itself with: for the hub, not for the pod. */
const CREDENTIALS = new Set(["authorization"]);

/**
 * The browser's cookies for the pod: the pod's own pass, the hub's proxy login (PROXY_COOKIE) never
 * does. Undefined when nothing is left.
 */
export function podCookies(cookie: string | string[] | undefined): string | undefined {
  const pairs = (Array.isArray(cookie) ? cookie : cookie ? [cookie] : [])
    .flatMap((header) => header.split(";"))
    .map((pair) => pair.trim())
    .filter((pair) => pair !== "" && pair.split("=", 1)[0]?.trim() !== PROXY_COOKIE);
  return pairs.length > 0 ? pairs.join("; ") : undefined;
}

/**
 * A cookie the pod sets, kept to the pod's prefix: its Path moves under the prefix (one pod's
 * cookies never go to another pod on the hub's origin), a Domain is dropped, and the name of the
 * hub's own login cookie (or a __Host- one, which must sit at `/`) is refused (undefined).
 */
export function podSetCookie(line: string, prefix: string): string | undefined {
  const [pair = "", ...attributes] = line.split(";");
  const name = pair.split("=", 1)[0]?.trim() ?? "";
  if (name === PROXY_COOKIE || /^__host-/i.test(name)) return undefined;
  let path = "/";
  const kept: string[] = [];
  for (const attribute of attributes) {
    const [key = "", ...value] = attribute.split("=");
    const lower = key.trim().toLowerCase();
    if (lower === "domain") continue;
    if (lower === "path") {
      const asked = value.join("=").trim();
      if (asked.startsWith("/")) path = asked;
      continue;
    }
    kept.push(attribute.trim());
  }
  return [pair.trim(), `Path=${prefix}${path}`, ...kept].join("; ");
}

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
    if (key === "host" || key === "cookie" || key.startsWith("x-forwarded-")) continue;
    out[key] = value;
  }
  const cookie = podCookies(headers.cookie);
  if (cookie) out.cookie = cookie;
  out.host = `127.0.0.1:${port}`;
  if (headers.host) out["x-forwarded-host"] = headers.host;
  out["x-forwarded-prefix"] = prefix;
  // One request per tunnel stream: the pod closes the connection when it has answered.
  out.connection = "close";
  return out;
}

/**
 * The pod's response headers as the client gets them: a Location on the pod's root and its
 * cookies' paths move under the prefix; nothing that acts on the hub's whole origin passes.
 */
export function responseHeaders(headers: IncomingHttpHeaders, prefix: string): OutgoingHttpHeaders {
  const dropped = named(headers.connection);
  const out: OutgoingHttpHeaders = {};
  for (const [key, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(key) || ORIGIN_WIDE.has(key) || dropped.has(key)) continue;
    out[key] = value;
  }
  const cookies = (headers["set-cookie"] ?? [])
    .map((line) => podSetCookie(line, prefix))
    .filter((line): line is string => line !== undefined);
  if (cookies.length > 0) out["set-cookie"] = cookies;
  else delete out["set-cookie"];
  const location = headers.location;
  if (typeof location === "string" && location.startsWith("/") && !location.startsWith("//"))
    out.location = `${prefix}${location}`;
  return out;
}
