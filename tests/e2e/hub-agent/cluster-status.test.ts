// The connectivity fields of Cluster status (lastTestedAt, lastTestOk, kubernetesVersion,
// nodeCount) set for agent clusters: the kubernetes agent reads the Version API and lists the
// nodes of a real API server (hack/kube, kwok nodes); the process agent is its own single node.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { CoreV1Api, VersionApi } from "@kubernetes/client-node";
import t from "tap";
import { ProcessRuntime } from "../../../operators/agent/runtimes/process/index.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import { startAgentOnHub } from "../../helpers/agent-on-hub.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { startKubernetesAgentOnHub } from "../../helpers/kubernetes-agent-on-hub.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc } = fleetCluster(0);

const CLUSTERS = `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata: { name: gpu }
spec: { runtime: kubernetes }
---
apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata: { name: bench }
spec: { runtime: process }
`;

interface ClusterStatus {
  lastTestedAt?: string;
  lastTestOk?: boolean;
  lastTestMessage?: string;
  kubernetesVersion?: string;
  nodeCount?: number;
}

t.test("agent clusters report their connectivity test, Kubernetes version and node count", async (t) => {
  const namespace = await testNamespace(t, kc, "cluster-status");
  const { hub } = await startHubOnGit(t, { files: { "clusters.yaml": CLUSTERS } });
  await waitFor(
    "clusters from git",
    async () => (await hub.store.get("Cluster", undefined, "bench")) ?? undefined,
    onKube,
  );
  const before = Date.now();
  await startKubernetesAgentOnHub(t, hub, "gpu", { kubeConfig: kc, namespace, reportIntervalMs: 500 });
  const processRuntime = await ProcessRuntime.open({
    stateDir: path.join(await mkdtemp(path.join(tmpdir(), "rlark-status-bench-")), "runtime"),
    logger: silentLogger,
  });
  t.teardown(() => processRuntime.stop({ terminatePods: true }));
  await startAgentOnHub(t, hub, "bench", {
    runtime: processRuntime,
    runtimeKind: "process",
    reportIntervalMs: 500,
  });

  const viaApi = async (name: string): Promise<ClusterStatus | undefined> => {
    const res = await fetch(`${hub.url}/api/v1/rlinf.io/v1alpha1/clusters/${name}`, {
      headers: { authorization: `Bearer ${hub.adminToken}` },
    });
    return ((await res.json()) as { status?: ClusterStatus }).status;
  };
  const tested = (name: string) => async () => {
    const status = await viaApi(name);
    return status?.lastTestedAt && status.nodeCount !== undefined ? status : undefined;
  };

  const gpu = await waitFor("the kubernetes cluster's test in the API", tested("gpu"), onKube);
  const { gitVersion } = await kc.makeApiClient(VersionApi).getCode();
  const nodes = await kc.makeApiClient(CoreV1Api).listNode();
  t.equal(gpu.lastTestOk, true, "the Version API answered");
  t.equal(gpu.lastTestMessage, undefined, "no failure message");
  t.equal(gpu.kubernetesVersion, gitVersion, "the API server's own gitVersion");
  t.equal(gpu.nodeCount, nodes.items.length, "every node of the cluster");
  t.ok(Date.parse(gpu.lastTestedAt as string) >= before - 1_000, "tested after the agent started");

  const bench = await waitFor("the process cluster's test in the API", tested("bench"), onKube);
  t.equal(bench.lastTestOk, true);
  t.equal(bench.nodeCount, 1, "a process agent is its machine: one node");
  t.equal(bench.kubernetesVersion, undefined, "no Kubernetes behind a process agent");
});
