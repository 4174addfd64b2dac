// The parts the soak runs, each started by the test helper that starts it for the tests: a git
// server (tests/helpers/git-server.ts, served by git daemon so it can be killed), two hubs on the
// kubernetes store with leader election (hub-processes.ts, as hub-failover.test.ts runs them; the
// store's CRDs in a group of their own, kube-store.ts), a process-runtime agent for the cluster
// "local" and a kubernetes-runtime agent for each of two clusters of a hack/kube fleet (fleet.ts).
import { CoreV1Api } from "@kubernetes/client-node";
import type { Test } from "tap";
import { type FleetCluster, fleetClusters, testNamespace } from "../../tests/helpers/fleet.ts";
import {
  type AgentProcess,
  type Echo,
  type HubProcess,
  type HubProcesses,
  hubProcesses,
} from "../../tests/helpers/hub-processes.ts";
import { kubeStoreFixture } from "../../tests/helpers/kube-store.ts";
import { onRealServers, waitFor } from "../../tests/helpers/wait-for.ts";
import { clusterFiles } from "./commits.ts";

export interface World {
  hubs: HubProcesses;
  /** Hub a and hub b; b shares a's CA. */
  hub: [HubProcess, HubProcess];
  /** The flags each hub was started with (a restart uses them again). */
  hubFlags: Map<HubProcess, string[]>;
  agents: Record<"local" | "kwok-1" | "kwok-2", AgentProcess>;
  kwok: [FleetCluster, FleetCluster];
  /** The namespace the kwok clusters' workloads go to (on both). */
  namespace: string;
  marker: string;
}

/** Slow enough for two busy cores: the hubs' timings as shipped (Lease 10 s). */
const long = { ...onRealServers, attempts: 2400 };

export async function startWorld(t: Test, marker: string, echo: Echo): Promise<World> {
  const clusters = fleetClusters();
  if (clusters.length < 2) throw new Error(`the fleet has ${clusters.length} clusters, the soak needs 2`);
  const kwok = [clusters[0]!, clusters[1]!] as [FleetCluster, FleetCluster];
  const fixture = await kubeStoreFixture(t);
  const leaseNamespace = await testNamespace(t, fixture.kubeConfig, "chaos");
  // One name on both clusters: a Job's template names the namespace its workload goes to.
  const namespace = `chaos-${marker.slice(-8)}`;
  for (const cluster of kwok) {
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespace({
      body: { metadata: { name: namespace, labels: { "rlark.io/test": "true" } } },
    });
    t.teardown(() => core.deleteNamespace({ name: namespace }).catch(() => undefined));
  }
  const hubs = await hubProcesses(
    t,
    marker,
    [
      ...["--store", "kubernetes", "--kubeconfig", fixture.kubeconfigFile, "--namespace", leaseNamespace],
      ...["--crd-group", fixture.group, "--status-branch", "rlark/status", "--no-dashboard"],
    ],
    echo,
  );
  // The soak's clusters, and not the helper's Job "svc": the agents enroll for clusters git names.
  await hubs.git.commit({ ...clusterFiles(), "job.yaml": null }, "chaos: the clusters");
  // Served by git daemon, not file://, so that the git server can be killed.
  await hubs.git.startDaemon();
  const repo = ["--repo", hubs.git.daemonUrl];
  const a = await hubs.hub("a");
  const b = await hubs.hub("b");
  const hubFlags = new Map<HubProcess, string[]>([
    [a, repo],
    [b, [...repo, "--ca-dir", `${a.dataDir}/pki`]],
  ]);
  hubs.start(a, hubFlags.get(a));
  await waitFor("hub a leads", async () => (await hubs.status(a, "/readyz")) === 200, long);
  hubs.start(b, hubFlags.get(b));
  await waitFor("hub b stands by", async () => (await hubs.status(b, "/readyz")) === 503, long);
  const kube = (cluster: FleetCluster) => [
    ...["--runtime", "kubernetes", "--kubeconfig", cluster.kubeconfig, "--namespace", namespace],
    ...["--nodeserver-stats-port", "0", "--nodeserver-group-port", "0"],
  ];
  const agents = {
    local: await hubs.startAgent(a, [a, b]),
    "kwok-1": await hubs.startAgent(a, [a, b], { cluster: "kwok-1", args: kube(kwok[0]) }),
    "kwok-2": await hubs.startAgent(a, [a, b], { cluster: "kwok-2", args: kube(kwok[1]) }),
  };
  return { hubs, hub: [a, b], hubFlags, agents, kwok, namespace, marker };
}

/** The hub that leads now (its /readyz says 200), if one does. */
export async function leader(world: World): Promise<HubProcess | undefined> {
  for (const hub of world.hub) if ((await world.hubs.status(hub, "/readyz")) === 200) return hub;
  return undefined;
}
