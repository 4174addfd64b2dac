// The Domain page's figures for a kubernetes cluster (hack/kube, kwok nodes, as root): the
// kubernetes agent polls every node's nodeserver at the node's InternalIP over TCP with a bearer
// token it hands the nodeservers in the peers Secret, and the hub stores what they say as the
// DomainPeer's status.traffic. The node's nodeserver is a real `rlark nodeserver --peers-secret
// --stats-listen` process in a network namespace holding that node's InternalIP (routed from the
// host), reaching the API server through a unix-socket bridge. Without the token: 401.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { CoreV1Api } from "@kubernetes/client-node";
import t from "tap";
import type { DomainPeer } from "../../../operators/api/index.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { clusterYaml, domainYaml, jobYaml, trainerTaskYaml } from "../../helpers/job-yaml.ts";
import { startKubernetesAgentOnHub } from "../../helpers/kubernetes-agent-on-hub.ts";
import { nodeNetns } from "../../helpers/node-netns.ts";
import { startSecretNodeserver } from "../../helpers/nodeserver-process.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc, kubeconfig: kubeconfigFile, server } = fleetCluster(0);
const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: "utf8", stdio: "pipe" });

function repository(namespace: string): Record<string, string> {
  return {
    "clusters.yaml": clusterYaml("gpu", "kubernetes"),
    "domain.yaml": domainYaml("lab", "10.0.9.0/24"),
    "net.yaml": jobYaml(
      "net",
      [trainerTaskYaml({ namespace, replicas: 1, resources: `{ requests: { cpu: "100m" } }` })],
      { domain: "lab" },
    ),
  };
}

t.test("the kubernetes agent reads its nodeservers' /stats by node IP with its token", async (t) => {
  const namespace = await testNamespace(t, kc, "domain-stats");
  const core = kc.makeApiClient(CoreV1Api);
  const nodes = (await core.listNode()).items;
  const nodeIP = nodes[0]?.status?.addresses?.find((a) => a.type === "InternalIP")?.address;
  if (!nodeIP) throw new Error("the fleet's first node has no InternalIP");
  const statsPort = 20_000 + ((randomBytes(2).readUInt16BE(0) % 20_000) as number);

  // the node: a namespace holding its InternalIP, routed from the host
  const { netns, dir } = await nodeNetns(t, "rkst", [nodeIP], server);
  const socketDir = path.join(dir, "run");
  startSecretNodeserver(t, {
    socketDir,
    namespace,
    kubeconfig: kubeconfigFile,
    statsListen: `0.0.0.0:${statsPort}`,
    netns,
  });

  const { hub } = await startHubOnGit(t, { files: repository(namespace) });
  await waitFor(
    "the Domain from git",
    async () => (await hub.store.get("Domain", undefined, "lab")) ?? undefined,
    onKube,
  );
  await startKubernetesAgentOnHub(t, hub, "gpu", {
    kubeConfig: kc,
    namespace,
    reportIntervalMs: 1_000,
    nodeserverStatsPort: statsPort,
    statsIntervalMs: 200,
  });

  const traffic = await waitFor(
    "the DomainPeer's status.traffic from the node's nodeserver",
    async () => (await hub.store.get<DomainPeer>("DomainPeer", "agent-gpu", "lab"))?.status?.traffic,
    onKube,
  );
  t.equal(traffic.poolConnections, 0, "its figures: no pool connection yet");
  t.same(traffic.pairs, [], "and no pair");
  t.match(traffic.observedAt, /^\d{4}-\d\d-\d\dT/, "with the time they were read");

  const status = (headers: string[]) =>
    sh("curl", [
      "-s",
      "-o",
      "/dev/null",
      "-w",
      "%{http_code}",
      ...headers,
      `http://${nodeIP}:${statsPort}/stats`,
    ]);
  t.equal(status([]), "401", "no token: refused");
  t.equal(status(["-H", "authorization: Bearer forged"]), "401", "a wrong token: refused");
});
