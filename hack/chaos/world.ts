// The parts the soak runs, each started by the test helper that starts it for the tests: a git
// server (tests/helpers/git-server.ts, served by git daemon so it can be killed), two hubs on the
// kubernetes store with leader election (hub-processes.ts, as hub-failover.test.ts runs them; the
// store's CRDs in a group of their own, kube-store.ts), a process-runtime agent for the cluster
// "local" and a kubernetes-runtime agent for each of two clusters of a hack/kube fleet (fleet.ts).
import type { ChildProcess } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
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
import { startSecretNodeserver } from "../../tests/helpers/nodeserver-process.ts";
import { onRealServers, waitFor } from "../../tests/helpers/wait-for.ts";
import { clusterFiles } from "./commits.ts";

export interface World {
  hubs: HubProcesses;
  /** Hub a and hub b; b shares a's CA. */
  hub: [HubProcess, HubProcess];
  /** The flags each hub was started with (a restart uses them again). */
  hubFlags: Map<HubProcess, string[]>;
  agents: Record<"local" | "kwok-1" | "kwok-2", AgentProcess>;
  /** One `rlark nodeserver --peers-secret` per kwok cluster, as its DaemonSet runs it on a node. */
  nodeservers: Record<"kwok-1" | "kwok-2", NodeserverProcess>;
  kwok: [FleetCluster, FleetCluster];
  /** The namespace the kwok clusters' workloads go to (on both). */
  namespace: string;
  marker: string;
  /** Processes a fault kills on purpose: the supervisor leaves their restart to the fault. */
  intended: Set<ChildProcess>;
  /** Exits nobody asked for, restarted by the supervisor (a hub that lost its Lease exits). */
  selfExits: string[];
  /** Stops the supervisor. */
  stopSupervising(): void;
}

export interface NodeserverProcess {
  child: ChildProcess;
  /** Where it serves nodeserver.sock (GET /stats). */
  socketDir: string;
  /** Starts it again, as the DaemonSet's pod would be; returns the new child. */
  restart(): ChildProcess;
}

/** Slow enough for two busy cores: the hubs' timings as shipped (Lease 10 s). */
const long = { ...onRealServers, attempts: 2400 };

/**
 * `hubFlags` go to both hubs (longer leader-election timings for a machine too busy to renew a
 * Lease within the default 7 s: a hub that misses it exits, by design).
 */
export async function startWorld(
  t: Test,
  marker: string,
  echo: Echo,
  hubFlags: string[] = [],
): Promise<World> {
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
      ...hubFlags,
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
  const flagsOf = new Map<HubProcess, string[]>([
    [a, repo],
    [b, [...repo, "--ca-dir", `${a.dataDir}/pki`]],
  ]);
  const world: World = {
    hubs,
    hub: [a, b],
    hubFlags: flagsOf,
    agents: {} as World["agents"],
    nodeservers: {} as World["nodeservers"],
    kwok,
    namespace,
    marker,
    intended: new Set(),
    selfExits: [],
    stopSupervising: () => undefined,
  };
  hubs.start(a, flagsOf.get(a));
  world.stopSupervising = supervise(world);
  t.teardown(() => world.stopSupervising());
  await waitFor("hub a leads", async () => (await hubs.status(a, "/readyz")) === 200, long);
  hubs.start(b, flagsOf.get(b));
  await waitFor("hub b stands by", async () => (await hubs.status(b, "/readyz")) !== undefined, long);
  const kube = (cluster: FleetCluster) => [
    ...["--runtime", "kubernetes", "--kubeconfig", cluster.kubeconfig, "--namespace", namespace],
    ...["--nodeserver-stats-port", "0", "--nodeserver-group-port", "0"],
  ];
  // The token comes from whichever hub's data dir: they share the CA and the store.
  world.agents.local = await enroll(world, "local", []);
  world.agents["kwok-1"] = await enroll(world, "kwok-1", kube(kwok[0]));
  world.agents["kwok-2"] = await enroll(world, "kwok-2", kube(kwok[1]));
  // Each reads the peers Secret its cluster's agent writes (rlark-domain-peers in the namespace).
  for (const [name, cluster] of [
    ["kwok-1", kwok[0]],
    ["kwok-2", kwok[1]],
  ] as const) {
    const socketDir = await mkdtemp(join(tmpdir(), `${marker}-nodeserver-`));
    const start = () =>
      startSecretNodeserver(t, {
        socketDir,
        namespace,
        kubeconfig: cluster.kubeconfig,
        onStderr: (text) => {
          for (const line of text.split("\n")) if (line) echo(`[nodeserver ${name}] ${line}\n`);
        },
      });
    const nodeserver: NodeserverProcess = {
      child: start(),
      socketDir,
      restart() {
        nodeserver.child = start();
        return nodeserver.child;
      },
    };
    world.nodeservers[name] = nodeserver;
  }
  return world;
}

/**
 * An agent enrolled and Online. An agent whose enrollment is cut (the hub killed or its Lease
 * lost meanwhile) tries again by itself with the same token and key; one that still exits (every
 * attempt cut) is reported in `selfExits` and enrolled again with a new token.
 */
async function enroll(world: World, cluster: string, args: string[]): Promise<AgentProcess> {
  const [a, b] = world.hub;
  for (let attempt = 1; ; attempt++) {
    const agent = await world.hubs.startAgent(a, [a, b], cluster === "local" ? {} : { cluster, args });
    // Not supervised until enrolled: a restart without a token could not enroll.
    world.intended.add(agent.child);
    const online = await waitFor(
      `agent ${cluster} enrolled and Online`,
      async () => {
        if (exited(agent.child)) return "exited";
        const hub = await leader(world);
        const status =
          hub && (await world.hubs.api(hub, `/api/v1/rlinf.io/v1alpha1/clusters/${cluster}`))?.status;
        return status?.phase === "Online" ? "online" : undefined;
      },
      long,
    );
    if (online === "online") {
      world.intended.delete(agent.child);
      return agent;
    }
    world.selfExits.push(
      `agent ${cluster} exited while enrolling (attempt ${attempt}, exit ${agent.child.exitCode})`,
    );
    if (attempt === 3) throw new Error(`agent ${cluster} could not enroll in 3 attempts`);
  }
}

const exited = (child: ChildProcess | undefined) =>
  child !== undefined && (child.exitCode !== null || child.signalCode !== null);

/**
 * Restarts a hub or an agent that exited without a fault asking, as Kubernetes or systemd would
 * (a hub that loses its Lease exits on purpose: a busy machine makes it miss a renewal). Each
 * such exit is kept in `world.selfExits` for the report.
 */
function supervise(world: World): () => void {
  const timer = setInterval(() => {
    for (const hub of world.hub) {
      if (exited(hub.child) && !world.intended.has(hub.child!)) {
        world.selfExits.push(
          `hub ${hub.name} exited by itself (${hub.child!.exitCode ?? hub.child!.signalCode})`,
        );
        world.hubs.start(hub, world.hubFlags.get(hub));
      }
    }
    for (const [name, nodeserver] of Object.entries(world.nodeservers)) {
      if (exited(nodeserver.child) && !world.intended.has(nodeserver.child)) {
        world.selfExits.push(
          `nodeserver ${name} exited by itself (${nodeserver.child.exitCode ?? nodeserver.child.signalCode})`,
        );
        nodeserver.restart();
      }
    }
    for (const [name, agent] of Object.entries(world.agents)) {
      if (exited(agent.child) && !world.intended.has(agent.child)) {
        world.selfExits.push(
          `agent ${name} exited by itself (${agent.child.exitCode ?? agent.child.signalCode})`,
        );
        agent.restart();
      }
    }
  }, 1000);
  return () => clearInterval(timer);
}

/** The hub that leads now (its /readyz says 200), if one does. */
export async function leader(world: World): Promise<HubProcess | undefined> {
  for (const hub of world.hub) if ((await world.hubs.status(hub, "/readyz")) === 200) return hub;
  return undefined;
}
