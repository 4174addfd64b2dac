// POST /api/v1/clusters/:cluster/test (admins): the connectivity test of an agentless Cluster on
// demand (`rlark cluster test NAME`), besides the periodic one every 60 s. The hub may not import
// the agent, so whoever drives the agentless clusters (cli/agentless.ts) hands the hub a tester;
// a hub without one (a standby, or a hub started without them) says so. The answer is the test's
// result, also written to the Cluster's status (lastTestedAt, lastTestOk, lastTestMessage); its
// message is redacted of the kubeconfig's credentials by the tester.
import type { IncomingMessage, ServerResponse } from "node:http";
import { type Route, route, sendJson, sendStatus } from "../../lib/http/index.ts";

export type ClusterTestAnswer =
  | { tested: true; ok: boolean; testedAt: string; message?: string; kubernetesVersion?: string }
  /** The Cluster does not exist or is not agentless: no test ran. */
  | { tested: false; reason: "NotFound" | "NotAgentless"; message: string };

export type ClusterTester = (cluster: string) => Promise<ClusterTestAnswer>;

/** A cluster name is a DNS-1123 label; anything else is refused before any work. */
const CLUSTER_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function clusterTestRoute(tester: () => ClusterTester | undefined): Route {
  return route({
    method: "POST",
    path: "/api/v1/clusters/:cluster/test",
    role: "admin",
    methodRefused: "run the connectivity test with POST",
    handle: ({ req, res }, { cluster }) => serveClusterTest(tester(), decodeURIComponent(cluster), req, res),
  });
}

async function serveClusterTest(
  tester: ClusterTester | undefined,
  cluster: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  // The request carries no body; whatever a client sent is not read.
  req.resume();
  if (!CLUSTER_NAME.test(cluster))
    return sendStatus(res, 400, "BadRequest", "the cluster name must be a DNS-1123 label");
  if (!tester)
    return sendStatus(
      res,
      503,
      "ServiceUnavailable",
      "this hub drives no agentless clusters now (a standby, or started without them)",
    );
  const answer = await tester(cluster);
  if (!answer.tested)
    return sendStatus(res, answer.reason === "NotFound" ? 404 : 409, answer.reason, answer.message);
  const { tested: _, ...result } = answer;
  return sendJson(res, 200, { cluster, ...result });
}
