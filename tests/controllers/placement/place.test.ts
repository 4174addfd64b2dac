import t from "tap";
import {
  type PlacementResult,
  PlacementSnapshot,
  placeJob,
  placementTask,
} from "../../../operators/controllers/placement/index.ts";
import { type Cluster, cluster, k8sTask, type Node, node, rawTask, type TaskTemplate } from "./fixtures.ts";

const gpuNode = (clusterName: string, name: string, gpus: string, extra: Parameters<typeof node>[2] = {}) =>
  node(clusterName, name, {
    labels: { "nvidia.com/gpu": "true" },
    allocatable: { cpu: "32", memory: "128Gi", "nvidia.com/gpu": gpus, pods: "110" },
    ...extra,
  });

function pool(clusters: Cluster[], nodes: Node[]): PlacementSnapshot {
  const snapshot = new PlacementSnapshot();
  for (const c of clusters) snapshot.setCluster(c);
  for (const n of nodes) snapshot.setNode(n);
  return snapshot;
}

/** `domain`: the Job has one, so its tasks may span clusters. */
function place(snapshot: PlacementSnapshot, templates: TaskTemplate[], domain = false): PlacementResult {
  return placeJob({
    tasks: templates.map(placementTask),
    clusters: snapshot.clusters(),
    spanClusters: domain,
  });
}

function clustersOf(result: PlacementResult): Record<string, string> {
  if (!result.placed) throw new Error(`not placed: ${result.message}`);
  return Object.fromEntries(result.tasks.map((p) => [p.task, p.cluster]));
}

const gpuTraining = () =>
  k8sTask("actor-head", {
    head: true,
    nodeSelector: { "nvidia.com/gpu": "true" },
    limits: { "nvidia.com/gpu": "1" },
  });
const robotPolicy = () =>
  k8sTask("policy", {
    nodeSelector: { "rlark.io/node-category-robot": "true" },
    requests: { cpu: "2", memory: "4Gi" },
  });

const beijingAndEdge = () =>
  pool(
    [cluster("beijing"), cluster("shanghai-edge", { labels: { "rlark.io/city": "shanghai" } })],
    [
      gpuNode("beijing", "gpu-node-01", "8"),
      node("beijing", "cpu-node-01"),
      node("shanghai-edge", "arm-01", {
        labels: { "rlark.io/node-category-robot": "true" },
        allocatable: { cpu: "8", memory: "16Gi" },
      }),
    ],
  );

t.test(
  "a Job with a Domain spans clusters: the GPU task in beijing, the robot task at the edge",
  async (t) => {
    const result = place(beijingAndEdge(), [gpuTraining(), robotPolicy()], true);
    t.same(clustersOf(result), { "actor-head": "beijing", policy: "shanghai-edge" });
    t.ok(result.placed && result.tasks[0]?.nodes.some((n) => n.node === "gpu-node-01"));
  },
);

t.test("a Job without a Domain is never split: every task in one cluster, or none placed", async (t) => {
  const result = place(beijingAndEdge(), [gpuTraining(), robotPolicy()]);
  t.equal(result.placed, false, "the GPU task and the robot task have no cluster in common");
  if (result.placed) return;
  t.equal(result.reason, "Unschedulable");
  t.equal(
    result.message,
    "no single Online cluster has room for every task, and a Job without a Domain runs all its tasks in one cluster (beijing: task policy: none of 2 nodes match the nodeSelector; shanghai-edge: task actor-head: none of 1 nodes match the nodeSelector)",
  );

  // Two tasks that fit in either cluster go to the same one, even when each alone would pick
  // the cluster with more room.
  const snapshot = pool(
    [cluster("big"), cluster("small")],
    [node("big", "n", { allocatable: { cpu: "10" } }), node("small", "n", { allocatable: { cpu: "9" } })],
  );
  const two = [k8sTask("head", { requests: { cpu: "5" } }), k8sTask("worker", { requests: { cpu: "4" } })];
  t.same(clustersOf(place(snapshot, two)), { head: "big", worker: "big" });
  t.same(
    clustersOf(place(snapshot, two, true)),
    { head: "big", worker: "small" },
    "with a Domain: most free",
  );

  // When the first choice cannot take the rest, the next cluster that takes them all is chosen.
  const pinned = [
    k8sTask("head", { requests: { cpu: "5" } }),
    k8sTask("worker", { requests: { cpu: "5" }, clusterSelector: { matchLabels: { zone: "s" } } }),
  ];
  const labelled = pool(
    [cluster("big"), cluster("small", { labels: { zone: "s" } })],
    [node("big", "n", { allocatable: { cpu: "64" } }), node("small", "n", { allocatable: { cpu: "10" } })],
  );
  t.same(clustersOf(place(labelled, pinned)), { head: "small", worker: "small" });

  // A task that fits nowhere at all is named as such, not as a single-cluster problem.
  const nowhere = place(labelled, [k8sTask("huge", { requests: { cpu: "100" } }), k8sTask("x")]);
  t.match(
    !nowhere.placed && nowhere.message,
    /^task huge: no Online cluster has a schedulable node with 100 cpu/,
  );
});

t.test("gang refusal: when one task fits and the other does not, neither is placed", async (t) => {
  const snapshot = pool([cluster("beijing")], [gpuNode("beijing", "gpu-node-01", "8")]);
  const result = place(snapshot, [gpuTraining(), robotPolicy()]);
  t.equal(result.placed, false);
  if (result.placed) return;
  t.equal(result.task, "policy");
  t.equal(result.reason, "Unschedulable");
  t.match(
    result.message,
    /^task policy: no Online cluster has a schedulable node matching rlark.io\/node-category-robot=true/,
  );
  t.match(result.message, /none of 1 nodes match the nodeSelector/);
});

t.test("a cordoned node is skipped, and the message says so and what the others lack", async (t) => {
  const snapshot = pool(
    [cluster("beijing")],
    [
      gpuNode("beijing", "gpu-node-01", "8", { requested: { "nvidia.com/gpu": "8" } }),
      gpuNode("beijing", "gpu-node-02", "8", { unschedulable: true }),
    ],
  );
  const result = place(snapshot, [gpuTraining()]);
  t.equal(result.placed, false);
  if (result.placed) return;
  t.equal(
    result.message,
    "task actor-head: no Online cluster has a schedulable node matching nvidia.com/gpu=true with 1 nvidia.com/gpu free (beijing: gpu-node-01 has 0 of 8 nvidia.com/gpu free, gpu-node-02 cordoned)",
  );
  // Uncordoned, the same node takes it.
  snapshot.setNode(gpuNode("beijing", "gpu-node-02", "8"));
  const again = place(snapshot, [gpuTraining()]);
  t.ok(again.placed && again.tasks[0]?.nodes[0]?.node === "gpu-node-02");
});

t.test("a node that is not Ready is skipped", async (t) => {
  const snapshot = pool([cluster("beijing")], [gpuNode("beijing", "gpu-node-01", "8", { ready: false })]);
  const result = place(snapshot, [gpuTraining()]);
  t.notOk(result.placed);
  t.match(!result.placed && result.message, /gpu-node-01 not Ready/);
});

t.test("clusterSelector narrows the clusters placement may choose", async (t) => {
  const snapshot = pool(
    [
      cluster("beijing", { labels: { "rlark.io/city": "beijing" } }),
      cluster("shanghai", { labels: { "rlark.io/city": "shanghai" } }),
    ],
    [
      node("beijing", "a", { allocatable: { cpu: "64" } }),
      node("shanghai", "b", { allocatable: { cpu: "8" } }),
    ],
  );
  const anywhere = k8sTask("work", { requests: { cpu: "1" } });
  t.same(clustersOf(place(snapshot, [anywhere])), { work: "beijing" }, "most free wins without a selector");
  const inShanghai = k8sTask("work", {
    requests: { cpu: "1" },
    clusterSelector: { matchLabels: { "rlark.io/city": "shanghai" } },
  });
  t.same(clustersOf(place(snapshot, [inShanghai])), { work: "shanghai" });
  const nowhere = k8sTask("work", {
    requests: { cpu: "1" },
    clusterSelector: { matchExpressions: [{ key: "rlark.io/city", operator: "In", values: ["wuhan"] }] },
  });
  const result = place(snapshot, [nowhere]);
  t.notOk(result.placed);
  t.match(
    !result.placed && result.message,
    /2 clusters \(beijing, \.\.\.\): does not match the clusterSelector/,
  );
});

t.test("a task goes only where the connected agent's runtime runs its agentType", async (t) => {
  const snapshot = pool(
    [
      cluster("k8s", { runtime: "kubernetes" }),
      cluster("bare", { runtime: "process" }),
      cluster("gone", { runtime: "kubernetes", online: false }),
    ],
    [
      node("k8s", "n1", { allocatable: { cpu: "999", memory: "999Gi" } }),
      node("bare", "m1", { allocatable: { cpu: "1", memory: "1Gi" } }),
      node("gone", "g1", { allocatable: { cpu: "999", memory: "999Gi" } }),
    ],
  );
  t.same(clustersOf(place(snapshot, [k8sTask("a", { requests: { cpu: "1" } })])), { a: "k8s" });
  // The kubernetes runtime drops Raw tasks: a Raw task goes to a process agent even when the
  // kubernetes cluster has far more room.
  t.same(clustersOf(place(snapshot, [rawTask("r")])), { r: "bare" });
  const onlyK8s = pool([cluster("k8s", { runtime: "kubernetes" })], [node("k8s", "n1")]);
  const raw = place(onlyK8s, [rawTask("r")]);
  t.notOk(raw.placed);
  t.match(!raw.placed && raw.message, /k8s: its agent's runtime kubernetes does not run Raw tasks/);
  const onlyBare = pool([cluster("bare", { runtime: "process" })], [node("bare", "m1")]);
  const refused = place(onlyBare, [k8sTask("a")]);
  t.match(
    !refused.placed && refused.message,
    /bare: its agent's runtime process does not run Kubernetes tasks/,
  );
  const onlyGone = pool([cluster("gone", { online: false })], [node("gone", "g1")]);
  const offline = place(onlyGone, [k8sTask("a")]);
  t.match(!offline.placed && offline.message, /gone: Offline/);
});

t.test("the runtime is the one the agent announced, not only the one git declares", async (t) => {
  // Declared kubernetes in git, but the agent that connected runs processes.
  const snapshot = pool(
    [cluster("mixed", { runtime: "kubernetes", agentRuntime: "process" })],
    [node("mixed", "m1")],
  );
  t.same(clustersOf(place(snapshot, [rawTask("r")])), { r: "mixed" });
  t.notOk(place(snapshot, [k8sTask("a")]).placed);
  // The agent reconnects as a kubernetes agent: the Cluster's status says so, and placement follows.
  snapshot.setCluster(cluster("mixed", { runtime: "kubernetes", agentRuntime: "kubernetes" }));
  t.same(clustersOf(place(snapshot, [k8sTask("a")])), { a: "mixed" });
  t.notOk(place(snapshot, [rawTask("r")]).placed);
});

t.test(
  "a Docker task goes only to a cluster whose agent runs Docker, else the message says whose do not",
  async (t) => {
    const docker: TaskTemplate = {
      name: "cam",
      role: "Env",
      agentType: "Docker",
      docker: { image: "cam:1", replicas: 2 },
    };
    const without = place(
      pool(
        [cluster("k8s", { runtime: "kubernetes" }), cluster("bare", { runtime: "process" })],
        [node("k8s", "n1"), node("bare", "m1")],
      ),
      [rawTask("r"), docker],
    );
    t.notOk(without.placed);
    if (without.placed) return;
    t.equal(without.task, "cam");
    t.match(without.message, /bare: its agent's runtime process does not run Docker tasks/);
    t.match(without.message, /k8s: its agent's runtime kubernetes does not run Docker tasks/);
    const snapshot = pool(
      [
        cluster("k8s", { runtime: "kubernetes" }),
        cluster("bare", { runtime: "process" }),
        cluster("edge", { runtime: "docker" }),
      ],
      [node("k8s", "n1"), node("bare", "m1"), node("edge", "robot")],
    );
    t.same(clustersOf(place(snapshot, [docker])), { cam: "edge" });
  },
);

t.test("ties go to the cluster with the most free resources, then to the first name", async (t) => {
  const same = { allocatable: { cpu: "8", memory: "16Gi" } };
  const snapshot = pool(
    [cluster("b"), cluster("a"), cluster("c")],
    [
      node("a", "n", same),
      node("b", "n", same),
      node("c", "n", { allocatable: { cpu: "8", memory: "16Gi" }, requested: { cpu: "4" } }),
    ],
  );
  t.same(clustersOf(place(snapshot, [k8sTask("x", { requests: { cpu: "1" } })])), { x: "a" });
});

t.test("replicas are counted across nodes, and limits stand in for missing requests", async (t) => {
  const snapshot = pool(
    [cluster("beijing")],
    [gpuNode("beijing", "g1", "8"), gpuNode("beijing", "g2", "8", { requested: { "nvidia.com/gpu": "4" } })],
  );
  const fits = place(snapshot, [
    k8sTask("train", {
      replicas: 3,
      limits: { "nvidia.com/gpu": "4" },
      nodeSelector: { "nvidia.com/gpu": "true" },
    }),
  ]);
  t.ok(fits.placed);
  t.same(fits.placed && fits.tasks[0]?.nodes, [
    { node: "g1", replicas: 2 },
    { node: "g2", replicas: 1 },
  ]);
  const tooMany = place(snapshot, [k8sTask("train", { replicas: 4, limits: { "nvidia.com/gpu": "4" } })]);
  t.notOk(tooMany.placed);
  t.match(!tooMany.placed && tooMany.message, /for each of 4 replicas \(beijing: room for 3 of 4 replicas/);
});

t.test("init containers raise a pod's request to their own when larger", async (t) => {
  const template = k8sTask("x", { requests: { cpu: "1" } });
  const spec = template.kubernetes?.workload.template.spec;
  if (!spec) throw new Error("fixture");
  spec.initContainers = [
    { name: "fetch", image: "busybox", resources: { requests: { cpu: "3", memory: "1Gi" } } },
  ];
  t.same(placementTask(template).request, { cpu: 3000, memory: 1024 ** 3 * 1000, pods: 1000 });
});

t.test("a DaemonSet task needs one matching node, not all of them", async (t) => {
  const snapshot = pool(
    [cluster("edge")],
    [
      node("edge", "cam-1", { labels: { camera: "yes" } }),
      node("edge", "cam-2", { labels: { camera: "yes" }, unschedulable: true }),
    ],
  );
  const ds = k8sTask("capture", {
    kind: "DaemonSet",
    nodeSelector: { camera: "yes" },
    requests: { cpu: "1" },
  });
  const result = place(snapshot, [ds]);
  t.ok(result.placed && result.tasks[0]?.nodes.length === 1);
  const none = place(pool([cluster("edge")], [node("edge", "x")]), [ds]);
  t.notOk(none.placed);
  t.match(!none.placed && none.message, /for its DaemonSet/);
});

t.test("when the first choice for one task starves a later one, another choice is tried", async (t) => {
  // "big" prefers x (more free), but "only-x" fits only in x; big must go to y.
  const snapshot = pool(
    [cluster("x", { labels: { zone: "x" } }), cluster("y")],
    [node("x", "n", { allocatable: { cpu: "10" } }), node("y", "n", { allocatable: { cpu: "6" } })],
  );
  const result = place(
    snapshot,
    [
      k8sTask("big", { requests: { cpu: "6" } }),
      k8sTask("only-x", { requests: { cpu: "6" }, clusterSelector: { matchLabels: { zone: "x" } } }),
    ],
    true,
  );
  t.same(clustersOf(result), { big: "y", "only-x": "x" });
});

t.test("two tasks of one Job never share the same free room", async (t) => {
  const snapshot = pool([cluster("beijing")], [gpuNode("beijing", "g1", "1")]);
  const result = place(snapshot, [
    k8sTask("a", { limits: { "nvidia.com/gpu": "1" } }),
    k8sTask("b", { limits: { "nvidia.com/gpu": "1" } }),
  ]);
  t.notOk(result.placed);
  t.match(!result.placed && result.message, /^task b: .*g1 has 0 of 1 nvidia.com\/gpu free/);
});
