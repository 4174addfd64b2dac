// The product's fuzz targets, one per parser at the trust boundary (docs: hack/fuzz/README.md).
import type { FuzzTarget } from "../target.ts";
import { cookies, jwt } from "./auth.ts";
import { kubeconfig } from "./kubeconfig.ts";
import { manifests } from "./manifests.ts";
import { domainPeerReports, nodeserverStats, peersSecret, peersState } from "./network.ts";
import { relayTicketLines } from "./relay.ts";
import { relaySocket } from "./relay-socket.ts";
import { sftpRequests } from "./sftp.ts";
import { agentToHub, hubToAgent } from "./tunnel.ts";
import { webhooks } from "./webhooks.ts";

export const PRODUCT: FuzzTarget[] = [
  manifests,
  webhooks,
  agentToHub,
  hubToAgent,
  relayTicketLines,
  relaySocket,
  sftpRequests,
  jwt,
  cookies,
  kubeconfig,
  peersState,
  peersSecret,
  nodeserverStats,
  domainPeerReports,
] as FuzzTarget[];
