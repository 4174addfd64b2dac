// The wire between nodeservers and the hub's domain relay (docs/adr/0007-domain-data-path.md):
// mutual TLS (the client presents its Domain's certificate, role `domain`; the hub presents a
// certificate of role `hub`), HTTP/2 inside. ALPN says who opens streams:
//   `h2`            the nodeserver opens a CONNECT stream per pod connection it sends out;
//   `rlark-accept`  the nodeserver first sends one JSON line ({globalNamespace, node}) and then
//                   serves HTTP/2 on the socket: the hub opens CONNECT streams for pods there.
// A CONNECT stream's :authority is `<virtual ip>:<port>` of the target, header `rlark-source` the
// sending pod's virtual IP. Answers: 200 (bytes follow), 403 (refused; `rlark-reason` says why),
// 502 (the target cannot be reached), 503 (no nodeserver of the target's cluster is connected).

import type { ClientSessionOptions, ServerSessionOptions, Settings } from "node:http2";

export const ALPN_DIAL = "h2";
export const ALPN_ACCEPT = "rlark-accept";
export const SOURCE_HEADER = "rlark-source";
export const REASON_HEADER = "rlark-reason";
export const MAX_HELLO_BYTES = 4096;

// Node's HTTP/2 defaults (64 KiB windows) cap a stream at one window per round trip: fine on
// loopback (ADR 0007 measured tuned ≈ default there), not between a cluster and a distant hub.
const SETTINGS: Settings = { initialWindowSize: 16 * 1024 * 1024, maxFrameSize: 1024 * 1024 };
export const SESSION_WINDOW = 64 * 1024 * 1024;
export const clientSessionOptions: ClientSessionOptions = { settings: SETTINGS, maxSessionMemory: 64 };
export const serverSessionOptions: ServerSessionOptions = { settings: SETTINGS, maxSessionMemory: 64 };

export interface AcceptHello {
  globalNamespace: string;
  node?: string;
}

export function splitTarget(authority: string): { ip: string; port: number } | undefined {
  const m = /^(\d{1,3}(?:\.\d{1,3}){3}):(\d{1,5})$/.exec(authority);
  if (!m) return undefined;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return undefined;
  return { ip: m[1] as string, port };
}
