// The PROXY protocol v1 line ("PROXY TCP4 <src> <dst> <sport> <dport>\r\n") that precedes a
// connection handed from rlark-net to the sidecar and from a nodeserver to a sidecar's :5700.
// At most 107 bytes (the protocol's own limit), so a peer cannot make us buffer more.

import type { Duplex } from "node:stream";
import { isIpv4 } from "../api/index.ts";

export interface ProxyHeader {
  src: string;
  dst: string;
  srcPort: number;
  dstPort: number;
}

const MAX_LINE = 107;
const LINE = /^PROXY TCP4 (\S+) (\S+) (\d{1,5}) (\d{1,5})$/;

export function formatProxyHeader(h: ProxyHeader): string {
  return `PROXY TCP4 ${h.src} ${h.dst} ${h.srcPort} ${h.dstPort}\r\n`;
}

export function parseProxyLine(line: string): ProxyHeader {
  const m = LINE.exec(line);
  const port = (s: string | undefined) => {
    const n = Number(s);
    if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`bad PROXY header port ${s}`);
    return n;
  };
  if (!m || !isIpv4(m[1] ?? "") || !isIpv4(m[2] ?? ""))
    throw new Error(`bad PROXY header ${JSON.stringify(line.slice(0, 40))}`);
  return { src: m[1] as string, dst: m[2] as string, srcPort: port(m[3]), dstPort: port(m[4]) };
}

/** Reads the header off `socket`; bytes after it are pushed back for whoever reads next. */
export function readProxyHeader(socket: Duplex): Promise<ProxyHeader> {
  return new Promise((resolve, reject) => {
    let buffered = Buffer.alloc(0);
    const done = (error?: Error, header?: ProxyHeader) => {
      socket.off("data", onData);
      socket.off("error", onEnd);
      socket.off("end", onEnd);
      socket.pause();
      if (error) reject(error);
      else resolve(header as ProxyHeader);
    };
    const onEnd = (error?: Error) => done(error ?? new Error("connection closed before the PROXY header"));
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf("\r\n");
      if (end < 0) {
        if (buffered.length > MAX_LINE) done(new Error("PROXY header longer than 107 bytes"));
        return;
      }
      const rest = buffered.subarray(end + 2);
      let header: ProxyHeader;
      try {
        header = parseProxyLine(buffered.subarray(0, end).toString("latin1"));
      } catch (error) {
        return done(error as Error);
      }
      // Listeners off and the stream paused first: unshift in flowing mode re-emits at once.
      done(undefined, header);
      if (rest.length > 0) socket.unshift(rest);
    };
    socket.on("data", onData);
    socket.on("error", onEnd);
    socket.on("end", onEnd);
  });
}
