// Domain pod networking (seed 001 §4.2-4.5; docs/networking.md): the nodeserver that routes a
// pod's connections (locally, or through the hub's relay on a per-Domain pool), the sidecar in
// each pod, and the peers state the agent writes for the nodeserver. Runs in clusters: imports
// only lib and api.
//
//   const ns = await startNodeserver({ socketDir: "/var/run/rlark" });
//   const watcher = watchPeersFile("/var/run/rlark", (s) => ns.setState(s), logger);

export { rlarkNetPath } from "../lib/rlark-net-path.ts";
export { type DataEngine, startDataEngine } from "./data-engine.ts";
export { NodeserverGroup, type NodeserverGroupOptions } from "./group-member.ts";
export { GroupPingMesh, type GroupPingMeshOptions, type GroupPingMeshReport } from "./group-pingmesh.ts";
export {
  acceptFromHub,
  dialHub,
  HubConnection,
  type HubLinkCredentials,
  type InboundStream,
  RefusedError,
} from "./hub-link.ts";
export {
  type DomainStats,
  INBOUND_PORT,
  type Nodeserver,
  type NodeserverOptions,
  POD_HEADER,
  SOCKET_NAME,
  startNodeserver,
} from "./nodeserver.ts";
export { PEERS_FILE, watchPeersFile, writePeersFile } from "./peers-file.ts";
// The peers Secret's parser, entered by hack/fuzz.
export { PeersSecretError, parsePeersSecret, peersFromSecret } from "./peers-from-secret.ts";
export { BackoffError, ConnectionPool, type PooledConnection, type PoolOptions } from "./pool.ts";
export { formatProxyHeader, type ProxyHeader } from "./proxy-header.ts";
export { parseSecretRef } from "./secret-ref.ts";
export { type Sidecar, type SidecarOptions, startSidecar } from "./sidecar.ts";
export { listenStats } from "./stats-listener.ts";
