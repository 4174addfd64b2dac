// The PROXY protocol v1 line ("PROXY TCP4 <src> <dst> <sport> <dport>\r\n") a nodeserver sends
// first on each stream to a sidecar's :5700; `rlark-net sidecar` reads it (at most 107 bytes,
// the protocol's own limit).

export interface ProxyHeader {
  src: string;
  dst: string;
  srcPort: number;
  dstPort: number;
}

export function formatProxyHeader(h: ProxyHeader): string {
  return `PROXY TCP4 ${h.src} ${h.dst} ${h.srcPort} ${h.dstPort}\r\n`;
}
