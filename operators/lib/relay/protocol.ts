// The wire between nodeservers and the hub's domain relay (docs/adr/0007-domain-data-path.md).
// Control: mutual TLS (the client presents its cluster's certificate for the Domain, role
// `domain`, CN the Domain, OU the cluster; the hub presents a certificate of role `hub`), HTTP/2
// inside. ALPN says who opens streams:
//   `h2`            the nodeserver opens a CONNECT stream per pod connection it sends out;
//   `rlark-accept`  the nodeserver first sends one JSON line ({globalNamespace, node}) and then
//                   serves HTTP/2 on the socket: the hub opens CONNECT streams for pods there.
//                   The hello's globalNamespace must be the certificate's cluster's.
// A CONNECT stream's :authority is `<virtual ip>:<port>` of the target, header `rlark-source` the
// sending pod's virtual IP (a pod of the certificate's cluster). Answers: 200 (with
// `rlark-ticket`), 403 (refused; `rlark-reason` says why), 502 (the target cannot be reached),
// 503 (no nodeserver of the target's cluster is connected). `rlark-peer-cluster` names the other
// end's cluster: on the 200, the target's; on the CONNECT the hub opens, the source's. The
// stream carries no bytes: it lives as long as the connection.
// Data: each end opens a plain TCP connection to the same port, sends its ticket and a newline
// (the first byte of a TLS handshake, 0x16, is never a ticket's), and the hub joins the two
// connections once both tickets are in. The nodeservers then run mutual TLS end to end (the
// target's nodeserver serves; each end presents its certificate and accepts only one of the same
// Domain for the cluster `rlark-peer-cluster` named), so the hub moves ciphertext it never
// decrypts. A ticket is single-use, unguessable,
// and valid for TICKET_TTL_MS.

export const ALPN_DIAL = "h2";
export const ALPN_ACCEPT = "rlark-accept";
export const SOURCE_HEADER = "rlark-source";
export const PEER_CLUSTER_HEADER = "rlark-peer-cluster";
export const REASON_HEADER = "rlark-reason";
/**
 * On a CONNECT, a cluster probe (PingMesh between clusters, docs/pingmesh.md#between-clusters):
 * from a nodeserver, `?` asks the hub which other clusters of the Domain have a reverse link
 * (answered in PROBE_CLUSTERS_HEADER), a cluster's name probes that cluster; the hub forwards a
 * probe on the cluster's reverse link with the value `1`, and the nodeserver there answers 200 at
 * once, touching no pod: its round trip is the relay path's control round trip.
 */
export const PROBE_HEADER = "rlark-probe";
/** The hub's answer to `rlark-probe: ?`: the Domain's other clusters with a reverse link, comma-separated, sorted. */
export const PROBE_CLUSTERS_HEADER = "rlark-probe-clusters";
export const TICKET_HEADER = "rlark-ticket";
export const TICKET_TTL_MS = 10_000;
/** 32 hex digits and a newline. */
export const TICKET_LINE_BYTES = 33;
export const MAX_HELLO_BYTES = 4096;

export interface AcceptHello {
  globalNamespace: string;
  node?: string;
}

export function isTicket(text: string): boolean {
  return /^[0-9a-f]{32}$/.test(text);
}

export function splitTarget(authority: string): { ip: string; port: number } | undefined {
  const m = /^(\d{1,3}(?:\.\d{1,3}){3}):(\d{1,5})$/.exec(authority);
  if (!m) return undefined;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return undefined;
  return { ip: m[1] as string, port };
}
