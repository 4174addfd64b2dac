// The hub's domain relay: cross-cluster Domain traffic between nodeservers, mutual TLS with each
// cluster's certificate for the Domain, membership and the source's cluster checked per stream
// (docs/networking.md).
export { checkHostInDomain } from "./check-host.ts";
export {
  createDomainRelay,
  type DomainRelay,
  type DomainRelayOptions,
  type DomainRelayStats,
} from "./relay.ts";
