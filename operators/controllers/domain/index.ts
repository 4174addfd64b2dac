// The Domain controller: virtual IPs, the Domain's certificate, DomainPeers (seed 000 §2-3).
//
//   manager.add(createDomainController({ pki: ca, dataDir }));
//
// Every pod of a Job whose spec.domain names the Domain gets an address from spec.cidr (network
// and broadcast excluded), persisted in Domain status.ipAllocations before anyone sees it, keyed
// by job / task / pod name: stable across hub restarts and pod re-creation, released (and
// remembered for the same pod name) when the Pod goes; AddressPoolExhausted=True when the range
// is full. One DomainPeer per cluster (agent-<cluster>/<domain>) lists the Domain's pods there
// and carries that cluster's own key (0600 in <dataDir>/pki/domains/<domain>/) and CA-signed
// certificate, which names the cluster (OU); the certificates alone go to Domain status. See
// docs/domains.md.

export { DomainCertificates } from "./certificates.ts";
export { createDomainController } from "./controller.ts";
export { ipToInt, parseCidr } from "./ipam.ts";
export { claimOf, peerSpecs } from "./members.ts";
