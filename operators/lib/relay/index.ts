// The wire between nodeservers and the hub's domain relay, shared by both ends
// (docs/adr/0007-domain-data-path.md), and the byte pump both use.
export {
  type AcceptHello,
  ALPN_ACCEPT,
  ALPN_DIAL,
  isTicket,
  MAX_HELLO_BYTES,
  PEER_CLUSTER_HEADER,
  PROBE_CLUSTERS_HEADER,
  PROBE_HEADER,
  REASON_HEADER,
  SOURCE_HEADER,
  splitTarget,
  TICKET_HEADER,
  TICKET_LINE_BYTES,
  TICKET_TTL_MS,
} from "./protocol.ts";
export { type SpliceOptions, splice } from "./splice.ts";
