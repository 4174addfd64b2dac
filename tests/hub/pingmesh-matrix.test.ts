// PingMesh on the hub: an agent's reported figures become Cluster status.pingMesh, a
// NetworkDegraded condition on the Cluster and on each Node at an end of a degraded pair, and the
// answers of GET /api/v1/pingmesh[/<cluster>] (viewers and up): the RTT matrix, which node or
// rack looks at fault, whether a set of nodes is fit to be one job. Figures that break the schema
// are refused whole, leaving the last good ones.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { ProcessRuntime } from "../../operators/agent/runtimes/process/index.ts";
import type { Cluster, Node, PingMeshStatus } from "../../operators/api/index.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import { startAgentOnHub } from "../helpers/agent-on-hub.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { clusterYaml } from "../helpers/job-yaml.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const good = (ms: number) => ({ samples: 64, loss: 0, p50Ms: ms, p99Ms: ms * 1.5, jitterMs: 0.1 });
const lossy = { samples: 64, loss: 0.25, p50Ms: 0.4, p99Ms: 0.9, jitterMs: 0.3 };

t.test("reported figures: conditions, the matrix and its answers", async (t) => {
  const { hub } = await startHubOnGit(t, {
    files: { "clusters.yaml": `${clusterYaml("edge")}---\n${clusterYaml("core")}` },
  });
  await waitFor(
    "clusters from git",
    async () => (await hub.store.get("Cluster", undefined, "core")) ?? undefined,
    onRealServers,
  );
  // edge-node is the agent's own node; n2 and n3 share rack r2, whose every pair is lossy
  let figures: PingMeshStatus | Record<string, unknown> = {
    observedAt: "2026-12-03T10:00:00Z",
    nodes: [
      { name: "edge-node", topology: { zone: "z1", rack: "r1" } },
      { name: "n2", topology: { zone: "z1", rack: "r2" } },
      { name: "n3", topology: { zone: "z1", rack: "r2" } },
      { name: "n4", topology: {} },
    ],
    nodePairs: [
      { source: "edge-node", target: "n2", figures: lossy },
      { source: "edge-node", target: "n3", figures: lossy },
      { source: "edge-node", target: "n4", figures: good(0.3) },
      { source: "n2", target: "n3", figures: lossy },
      { source: "n4", target: "edge-node", figures: good(0.3) },
    ],
    clusterPairs: [{ target: "core", figures: good(12) }],
  };
  const runtime = await ProcessRuntime.open({
    stateDir: path.join(await mkdtemp(path.join(tmpdir(), "rlark-pingmesh-matrix-")), "runtime"),
    nodeName: "edge-node",
    logger: silentLogger,
  });
  await startAgentOnHub(t, hub, "edge", {
    runtime,
    runtimeKind: "process",
    reportIntervalMs: 300,
    pingMesh: () => figures as PingMeshStatus,
  });
  t.teardown(() => runtime.stop({ terminatePods: true }));

  const condition = (conditions: readonly { type: string }[] | undefined) =>
    conditions?.find((c) => c.type === "NetworkDegraded") as
      | { status: string; reason: string; message: string }
      | undefined;
  const cluster = await waitFor(
    "edge's NetworkDegraded condition",
    async () => {
      const c = await hub.store.get<Cluster>("Cluster", undefined, "edge");
      return condition(c?.status?.conditions) ? c : undefined;
    },
    onRealServers,
  );
  t.equal(cluster.status?.pingMesh?.nodePairs?.length, 5, "the figures are on the Cluster");
  const onCluster = condition(cluster.status?.conditions);
  t.equal(onCluster?.status, "True");
  t.match(onCluster?.message, /3 pairs over 5% loss or 100ms p99: edge-node → n2: loss 25%/);
  const node = await waitFor(
    "edge-node's condition",
    async () => condition((await hub.store.get<Node>("Node", "agent-edge", "edge-node"))?.status?.conditions),
    onRealServers,
  );
  t.same(
    { status: node.status, reason: node.reason },
    { status: "True", reason: "SomePairsDegraded" },
    "the node at one end of degraded pairs, not all of its pairs",
  );
  t.match(node.message, /2 of 4 probed pairs degraded: to n2: loss 25%, to n3: loss 25%/);

  const get = async (route: string, token: string | undefined = hub.adminToken) => {
    const res = await fetch(`${hub.url}${route}`, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  t.equal((await get("/api/v1/pingmesh", "")).status, 401, "no token, no matrix");
  const matrix = await get("/api/v1/pingmesh");
  t.same(matrix.body.clusters, ["core", "edge"]);
  t.same(
    matrix.body.pairs,
    [{ source: "edge", target: "core", figures: good(12) }],
    "the cluster RTT matrix",
  );

  const nodes = await get("/api/v1/pingmesh/edge?nodes=edge-node,n4");
  t.same(
    nodes.body.suspects,
    [
      {
        scope: "node",
        name: "n2",
        message: "every one of its 2 pairs is degraded: its NIC or host, not the network around it",
      },
      {
        scope: "node",
        name: "n3",
        message: "every one of its 2 pairs is degraded: its NIC or host, not the network around it",
      },
      {
        scope: "rack",
        name: "r2",
        message: "all 2 of its nodes have degraded pairs (n2, n3): the rack's uplink rather than one node",
      },
    ],
    "one node's NIC, or a whole rack",
  );
  t.same(
    nodes.body.fit,
    { nodes: ["edge-node", "n4"], ok: true, problems: [] },
    "edge-node and n4 fit one job",
  );
  const unfit = await get("/api/v1/pingmesh/edge?nodes=edge-node,n2,n4");
  t.same(
    (unfit.body.fit as { problems: string[] }).problems,
    ["edge-node → n2: loss 25%", "n2 ↔ n4: not measured"],
    "and with n2 they do not, saying why",
  );
  t.equal((await get("/api/v1/pingmesh/nowhere")).status, 404);

  // an agent's figures that break the schema are refused: the last good ones stay
  figures = {
    observedAt: "2026-12-03T11:00:00Z",
    nodePairs: [{ source: "edge-node", target: "n2", figures: { samples: 1, loss: 7 } }],
  };
  const before = (await hub.store.get<Cluster>("Cluster", undefined, "edge"))?.metadata.resourceVersion;
  await waitFor(
    "another report",
    async () =>
      (await hub.store.get<Cluster>("Cluster", undefined, "edge"))?.metadata.resourceVersion !== before,
    onRealServers,
  ).catch(() => {});
  const after = await hub.store.get<Cluster>("Cluster", undefined, "edge");
  t.equal(after?.status?.pingMesh?.observedAt, "2026-12-03T10:00:00Z", "the invalid figures were not kept");
  t.equal(after?.status?.phase, "Online", "and the agent stays connected");
});
