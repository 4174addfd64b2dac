// Every fuzz target, one per parser at the trust boundary (docs: hack/fuzz/README.md).
import type { FuzzTarget } from "../target.ts";
import { cookies, jwt } from "./auth.ts";
import { kubeconfig } from "./kubeconfig.ts";
import { manifests } from "./manifests.ts";
import { domainPeerReports, nodeserverStats, peersSecret, peersState } from "./network.ts";
import { relayTicketLines } from "./relay.ts";
import { SELF_TEST } from "./self-test.ts";
import { sftpRequests } from "./sftp.ts";
import { agentToHub, hubToAgent } from "./tunnel.ts";
import { webhooks } from "./webhooks.ts";

const PRODUCT: FuzzTarget[] = [
  manifests,
  webhooks,
  agentToHub,
  hubToAgent,
  relayTicketLines,
  sftpRequests,
  jwt,
  cookies,
  kubeconfig,
  peersState,
  peersSecret,
  nodeserverStats,
  domainPeerReports,
] as FuzzTarget[];

/** The product's targets, or the harness's own self-test targets (RLARK_FUZZ_SELF_TEST=1). */
export const TARGETS: FuzzTarget[] =
  process.env.RLARK_FUZZ_SELF_TEST === "1" ? (SELF_TEST as FuzzTarget[]) : PRODUCT;
