// The nodeserver's refusal of a sidecar's CONNECT: a status and the reason in `rlark-reason`.

import type { Duplex } from "node:stream";
import { REASON_HEADER } from "../lib/relay/index.ts";

export function refuse(socket: Duplex, status: number, reason: string): void {
  const text =
    { 403: "Forbidden", 404: "Not Found", 502: "Bad Gateway", 503: "Service Unavailable" }[status] ?? "Error";
  // Reading on (and dropping what the client sent ahead of the answer) is what lets its close
  // reach us: a socket nobody reads never sees its end, and its fd would stay open.
  socket.resume();
  socket.end(`HTTP/1.1 ${status} ${text}\r\n${REASON_HEADER}: ${reason}\r\nconnection: close\r\n\r\n`);
}
