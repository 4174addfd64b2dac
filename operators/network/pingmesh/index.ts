// PingMesh (seed 002; docs/pingmesh.md): light, long-lived TCP-connect probes from each node to a
// topology-aware sample of its peers, with RTT p50/p99, jitter and loss per pair over fixed-size
// windows, labelled by the NodeTopology of each end.
//
//   const mesh = new PingMesh({ self: { name, topology }, clock, probe: tcpProbe(clock, 1000) });
//   mesh.setPeers(peers); mesh.start(); ... mesh.results();

export { type IcmpProber, startIcmpProber } from "./icmp-probe.ts";
export { type PeerResult, PingMesh, type PingMeshOptions, type PingMeshStats } from "./mesh.ts";
export { type Peer, samplePeers } from "./sample.ts";
export { meshStatus } from "./status.ts";
export { type Probe, tcpProbe } from "./tcp-probe.ts";
export {
  mergeTopology,
  type NodeTopology,
  TOPOLOGY_FIELDS,
  TOPOLOGY_LABELS,
  topologyFromConfig,
  topologyFromLabels,
} from "./topology.ts";
export { type PairFigures, ProbeWindow } from "./window.ts";
