// One node's PingMesh results in the shape its agent reports (Cluster status.pingMesh): the node
// and its peers with their topology, and a pair per probed peer. Pure.

import type { PingMeshStatus } from "../../api/index.ts";
import type { PeerResult } from "./mesh.ts";
import type { NodeTopology } from "./topology.ts";

export function meshStatus(
  self: { name: string; topology: NodeTopology },
  results: readonly PeerResult[],
  observedAt: string,
): PingMeshStatus | undefined {
  if (results.length === 0) return undefined;
  const nodes = [self, ...results.map((r) => ({ name: r.target, topology: r.topology }))]
    .map((n) => ({ name: n.name, topology: { ...n.topology } }))
    .sort((a, b) => (a.name < b.name ? -1 : 1));
  return {
    observedAt,
    nodes,
    nodePairs: results.map((r) => ({
      source: self.name,
      target: r.target,
      figures: { ...r.figures },
      ...(r.icmp ? { icmp: { ...r.icmp } } : {}),
    })),
  };
}
