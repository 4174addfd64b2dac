// The wire between nodeservers and the hub's domain relay, shared by both ends
// (docs/adr/0007-domain-data-path.md), and the byte pump both use.
export {
  type AcceptHello,
  ALPN_ACCEPT,
  ALPN_DIAL,
  clientSessionOptions,
  MAX_HELLO_BYTES,
  REASON_HEADER,
  SESSION_WINDOW,
  SOURCE_HEADER,
  serverSessionOptions,
  splitTarget,
} from "./protocol.ts";
export { splice } from "./splice.ts";
