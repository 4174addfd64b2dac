// Which browser origins are the hub's own. A page's Origin is compared, scheme, host and port, with
// the origins the hub is known by: the `--public-url`s it is given (behind a TLS proxy, a name) and
// the address it listens on. Never with the request's Host header: a page on a name the attacker
// points at the hub (DNS rebinding) sends a Host that matches its own Origin.
import type { IncomingMessage } from "node:http";
import { networkInterfaces } from "node:os";

/** Whether a request may act as a page of the hub: no Origin (not a browser) or one of the hub's. */
export type OriginCheck = (req: IncomingMessage) => boolean;

const LOOPBACK = ["127.0.0.1", "localhost", "[::1]"];

/** `scheme://host[:port]` of a public URL; throws naming what is wrong with it. */
export function publicOrigin(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`public URL ${JSON.stringify(url)} is not a URL (e.g. https://rlark.example.com)`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    throw new Error(`public URL ${JSON.stringify(url)}: expected http:// or https://`);
  if (parsed.username || parsed.password)
    throw new Error(`public URL ${JSON.stringify(url)}: no user name or password belongs in it`);
  return parsed.origin;
}

/**
 * The hub's origins: the public URLs' (from publicOrigin), and http:// on the port it listens on at the address it
 * listens on, also as localhost and [::1] for a loopback address, and as every interface address
 * of this machine for a wildcard one (0.0.0.0, ::). A name the machine is reached by is a public URL.
 */
export function hubOrigins(
  listen: { host: string; port: number },
  publicOrigins: readonly string[] = [],
): Set<string> {
  const origins = new Set(publicOrigins);
  const host = listen.host.replace(/^\[(.*)\]$/, "$1");
  const hosts =
    host === "" || host === "0.0.0.0" || host === "::"
      ? [...LOOPBACK, ...interfaceAddresses()]
      : ["127.0.0.1", "::1", "localhost"].includes(host)
        ? LOOPBACK
        : [host.includes(":") ? `[${host}]` : host];
  for (const name of hosts) origins.add(new URL(`http://${name}:${listen.port}`).origin);
  return origins;
}

function interfaceAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flatMap((list) => list ?? [])
    .filter((i) => !(i.family === "IPv6" && i.scopeid))
    .map((i) => (i.family === "IPv6" ? `[${i.address}]` : i.address));
}

/** Checks a request's Origin against `origins()`, read per request (the port is known after listen). */
export function originCheck(origins: () => ReadonlySet<string>): OriginCheck {
  return (req) => {
    const origin = req.headers.origin;
    if (origin === undefined) return true; // not a browser: it proves itself with its token alone
    try {
      return origins().has(new URL(origin).origin);
    } catch {
      return false; // "null" (a sandboxed or file: page) or garbage
    }
  };
}
