// The AgentGroup of a kubernetes cluster (hack/kube, kwok nodes, as root; docs/diagnosis.md):
// the kubernetes agent hands its nodeservers the group key (derived from its credentials) and the
// nodes' InternalIPs as seeds in the peers Secret, the nodeservers gossip, and the agent reports
// the group to the hub as a nodeserver's GET /group gives it. The nodes are real `rlark nodeserver
// --peers-secret --group-listen` processes in a network namespace holding two nodes' InternalIPs
// (kwok runs no pods), reaching the API server through a unix-socket bridge. The key shows in no
// log and no API answer. The nodeservers also probe each other (GET /pingmesh) and the agent
// reports their node pairs, labelled with the Nodes' topology, in status.pingMesh.
import { randomBytes } from "node:crypto";
import path from "node:path";
import { CoreV1Api } from "@kubernetes/client-node";
import t from "tap";
import type { Cluster } from "../../../operators/api/index.ts";
import { topologyFromLabels } from "../../../operators/network/pingmesh/index.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { clusterYaml } from "../../helpers/job-yaml.ts";
import { startKubernetesAgentOnHub } from "../../helpers/kubernetes-agent-on-hub.ts";
import { nodeNetns } from "../../helpers/node-netns.ts";
import { startSecretNodeserver } from "../../helpers/nodeserver-process.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc, kubeconfig: kubeconfigFile, server } = fleetCluster(0);
const slow = { attempts: 480, everyMs: 250 };

t.test("the kubernetes agent's nodeservers form its AgentGroup and the hub shows it", async (t) => {
  const namespace = await testNamespace(t, kc, "agent-group");
  const core = kc.makeApiClient(CoreV1Api);
  // the two nodes the agent asks first (it asks in address order)
  const nodes = (await core.listNode()).items
    .map((n) => ({
      name: n.metadata?.name ?? "",
      labels: n.metadata?.labels ?? {},
      ip: n.status?.addresses?.find((a) => a.type === "InternalIP")?.address ?? "",
    }))
    .filter((n) => n.ip)
    .sort((a, b) => (a.ip < b.ip ? -1 : 1))
    .slice(0, 2);
  if (nodes.length < 2)
    throw new Error("the fleet's first cluster has fewer than two nodes with an InternalIP");
  const statsPort = 20_000 + (randomBytes(2).readUInt16BE(0) % 20_000);
  const groupPort = statsPort + 1;

  // the nodes: one namespace holding both InternalIPs, routed from the host
  const { netns, dir } = await nodeNetns(
    t,
    "rkgr",
    nodes.map((n) => n.ip),
    server,
  );
  const logs = new Map<string, string>();
  const nodeservers = nodes.map((n) =>
    startSecretNodeserver(t, {
      socketDir: path.join(dir, n.name),
      namespace,
      kubeconfig: kubeconfigFile,
      statsListen: `${n.ip}:${statsPort}`,
      netns,
      args: [
        "--node",
        n.name,
        "--group-listen",
        `${n.ip}:${groupPort}`,
        "--group-pingmesh-interval",
        "300ms",
      ],
      onStderr: (text) => logs.set(n.name, (logs.get(n.name) ?? "") + text),
    }),
  );

  const { hub } = await startHubOnGit(t, { files: { "clusters.yaml": clusterYaml("gpu", "kubernetes") } });
  await waitFor(
    "the Cluster from git",
    async () => (await hub.store.get("Cluster", undefined, "gpu")) ?? undefined,
    onKube,
  );
  await startKubernetesAgentOnHub(t, hub, "gpu", {
    kubeConfig: kc,
    namespace,
    reportIntervalMs: 1_000,
    nodeserverStatsPort: statsPort,
    nodeserverGroupPort: groupPort,
    statsIntervalMs: 200,
    nodeTopology: topologyFromLabels,
  });

  // the peers Secret carries the group: the key and every node as a seed
  const secret = await waitFor(
    "the peers Secret with the group",
    async () => {
      const s = await core
        .readNamespacedSecret({ name: "rlark-domain-peers", namespace })
        .catch(() => undefined);
      const text = s?.data?.["peers.json"];
      const state = text ? JSON.parse(Buffer.from(text, "base64").toString("utf8")) : undefined;
      return state?.group ? (state.group as { key: string; seeds: string[] }) : undefined;
    },
    onKube,
  );
  t.match(secret.key, /^[0-9a-f]{64}$/, "a 256-bit group key");
  for (const n of nodes) t.ok(secret.seeds.includes(`${n.ip}:${groupPort}`), `${n.name} is a seed`);

  type Group = NonNullable<NonNullable<Cluster["status"]>["agentGroup"]>;
  const groupOf = async () =>
    ((await hub.store.get<Cluster>("Cluster", undefined, "gpu"))?.status?.agentGroup as Group | undefined) ??
    undefined;
  const group = await waitFor(
    "the hub shows both nodeservers alive",
    async () => {
      const g = await groupOf();
      return g && g.alive === 2 ? g : undefined;
    },
    slow,
  );
  t.equal(group.member, nodes[0]?.name, "the view of the first node the agent asks");
  t.same(
    (group.members ?? []).map((m) => [m.id, m.address, m.state]),
    nodes.map((n) => [n.name, `${n.ip}:${groupPort}`, "alive"]).sort(),
    "each node's member at its InternalIP",
  );
  const cluster = await hub.store.get<Cluster>("Cluster", undefined, "gpu");
  t.match(
    cluster?.status?.capabilities?.find((c) => c.name === "network-probe"),
    { process: "RUNNING", health: "READY", message: /AgentGroup of the nodeservers, as .* sees it: 2 alive/ },
    "network-probe READY from the nodeservers' view",
  );

  // PingMesh: each node probes the other; the agent merges both answers into node pairs
  type Mesh = NonNullable<NonNullable<Cluster["status"]>["pingMesh"]>;
  const meshOf = async () =>
    ((await hub.store.get<Cluster>("Cluster", undefined, "gpu"))?.status?.pingMesh as Mesh | undefined) ??
    undefined;
  const [n0, n1] = nodes.map((n) => n.name) as [string, string];
  const mesh = await waitFor(
    "the hub shows both node pairs answered",
    async () => {
      const m = await meshOf();
      const pairs = (m?.nodePairs ?? []).filter((p) => p.figures.samples > 0 && p.figures.loss === 0);
      return pairs.length === 2 ? m : undefined;
    },
    slow,
  );
  t.same(
    (mesh.nodePairs ?? []).map((p) => [p.source, p.target]),
    [
      [n0, n1],
      [n1, n0],
    ].sort(),
    "a pair each way between the two nodes",
  );
  for (const n of nodes) {
    const topology = topologyFromLabels(n.labels);
    t.same(
      mesh.nodes?.find((m) => m.name === n.name)?.topology ?? {},
      topology,
      `${n.name}'s topology from its Node labels, unknown fields absent`,
    );
  }

  // the first node's nodeserver goes: the agent reports the second's view, which finds it dead
  const [first] = nodeservers;
  const exited = new Promise((resolve) => first?.once("exit", resolve));
  first?.kill("SIGKILL");
  await exited;
  const after = await waitFor(
    "the hub shows the first node dead, in the second's view",
    async () => {
      const g = await groupOf();
      return g?.member === nodes[1]?.name && g?.dead === 1 ? g : undefined;
    },
    slow,
  );
  t.match(after, { alive: 1, dead: 1 }, "one alive, one dead");
  await waitFor(
    "the hub shows loss from the second node to the first",
    async () =>
      (await meshOf())?.nodePairs?.find((p) => p.source === n1 && p.target === n0 && p.figures.loss > 0),
    slow,
  );

  const answer = await fetch(`${hub.url}/api/v1/rlinf.io/v1alpha1/clusters/gpu`, {
    headers: { authorization: `Bearer ${hub.adminToken}` },
  });
  const text = await answer.text();
  t.equal(answer.status, 200, "the Cluster through the API");
  t.match(text, /agentGroup/, "with its group");
  t.notOk(text.includes(secret.key), "and never the group key");
  for (const n of nodes)
    t.notOk((logs.get(n.name) ?? "").includes(secret.key), `${n.name}'s log holds no key`);
});
