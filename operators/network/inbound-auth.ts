// Authentication of the streams brought to a pod's :5700 (docs/networking.md "Who may reach
// :5700"). The PROXY line alone would let anyone who reaches the pod's IP claim any source and
// reach any of its ports, so each line is followed by a ticket only holders of the target pod's
// key can make:
//
//   RLARK-AUTH v1 <kid> <unix ms> <nonce> <mac>\r\n
//
// mac = first 16 bytes (hex) of HMAC-SHA256(pod key, "rlark-inbound v1\n" + PROXY line (with its
// CRLF) + "<kid> <unix ms> <nonce>"). The pod key is HMAC-SHA256(Domain key, "pod <ns>/<name>
// <virtual ip>"), the Domain key HMAC-SHA256(the DomainPeer's private key PEM, "rlark-inbound
// domain <domain>"): every nodeserver of the cluster holds the DomainPeer (whose key is the
// cluster's own), so any of them can mint a ticket for any pod of the Domain in that cluster, and
// a pod's sidecar holds only its own pod's key
// (nodeserver GET /inbound_key). rlark-net checks the MAC, that the line's destination is its
// own virtual IP, that the time is within INBOUND_TICKET_WINDOW_MS of its clock, and that the
// nonce is new; a ticket is thus good for one stream to one port of one pod.

import { createHash, createHmac, randomBytes } from "node:crypto";
import { formatProxyHeader, type ProxyHeader } from "./proxy-header.ts";

export const INBOUND_TICKET_WINDOW_MS = 10_000;

export function domainInboundKey(domain: string, keyPem: string): Buffer {
  return createHmac("sha256", keyPem).update(`rlark-inbound domain ${domain}`).digest();
}

/** A pod's key, and its id: names the key without revealing it (the sidecar fetches its key again on an unknown id). */
export interface PodInboundKey {
  key: Buffer;
  id: string;
}

export function podInboundKey(
  domainKey: Buffer,
  pod: { namespace?: string | undefined; name: string; ip: string },
): PodInboundKey {
  const key = createHmac("sha256", domainKey)
    .update(`pod ${pod.namespace ?? ""}/${pod.name} ${pod.ip}`)
    .digest();
  return { key, id: createHash("sha256").update(key).digest("hex").slice(0, 8) };
}

/** `<kid> <unix ms> <nonce> <mac>` for `proxyLine` (with its CRLF). */
export function inboundTicket(podKey: PodInboundKey, proxyLine: string, now = Date.now()): string {
  const signed = `${podKey.id} ${now} ${randomBytes(16).toString("hex")}`;
  const mac = createHmac("sha256", podKey.key)
    .update(`rlark-inbound v1\n${proxyLine}${signed}`)
    .digest("hex")
    .slice(0, 32);
  return `${signed} ${mac}`;
}

/** The PROXY line and its ticket: what a nodeserver writes first on a stream to a sidecar. */
export function inboundPreamble(podKey: PodInboundKey, header: ProxyHeader, now?: number): string {
  const line = formatProxyHeader(header);
  return `${line}RLARK-AUTH v1 ${inboundTicket(podKey, line, now)}\r\n`;
}
