import fc from "fast-check";
import t from "tap";
import {
  type ClusterView,
  type NodeView,
  PlacementSnapshot,
  type PlacementTask,
  placeJob,
} from "../../../operators/controllers/placement/index.ts";

const RESOURCES = ["cpu", "memory", "nvidia.com/gpu"] as const;

const amountsArb = fc.record({
  cpu: fc.integer({ min: 0, max: 8 }).map((n) => n * 1000),
  memory: fc.integer({ min: 0, max: 8 }).map((n) => n * 1000),
  "nvidia.com/gpu": fc.integer({ min: 0, max: 4 }).map((n) => n * 1000),
});

const nodeArb = (name: string) =>
  fc
    .record({
      labels: fc.constantFrom<Record<string, string>>({}, { gpu: "true" }, { robot: "true" }),
      schedulable: fc.boolean(),
      ready: fc.boolean(),
      allocatable: amountsArb,
      used: fc.integer({ min: 0, max: 100 }),
    })
    .map(({ used, allocatable, ...rest }): NodeView => {
      const free: Record<string, number> = {};
      for (const r of RESOURCES) free[r] = Math.floor((allocatable[r] * (100 - used)) / 100);
      return { name, allocatable, free, ...rest };
    });

const clusterArb = (name: string) =>
  fc
    .record({
      labels: fc.constantFrom<Record<string, string>>({}, { city: "beijing" }, { city: "shanghai" }),
      runtime: fc.constantFrom("kubernetes", "process"),
      online: fc.boolean(),
      nodeCount: fc.integer({ min: 0, max: 4 }),
    })
    .chain(({ nodeCount, ...rest }) =>
      fc
        .tuple(...Array.from({ length: nodeCount }, (_, i) => nodeArb(`n${i}`)))
        .map((nodes): ClusterView => ({ name, ...rest, nodes })),
    );

const clustersArb = fc
  .integer({ min: 1, max: 5 })
  .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => clusterArb(`c${i}`))));

const taskArb = (name: string) =>
  fc
    .record({
      agentType: fc.constantFrom("Kubernetes", "Raw", "Docker" as const),
      nodeSelector: fc.constantFrom<Record<string, string>>({}, { gpu: "true" }, { robot: "true" }),
      replicas: fc.integer({ min: 0, max: 4 }),
      daemonSet: fc.boolean(),
      request: fc.record({
        cpu: fc.integer({ min: 0, max: 4 }).map((n) => n * 500),
        memory: fc.integer({ min: 0, max: 4 }).map((n) => n * 1000),
        "nvidia.com/gpu": fc.integer({ min: 0, max: 2 }).map((n) => n * 1000),
      }),
    })
    .map((task): PlacementTask => ({ name, ...task }));

const tasksArb = fc
  .integer({ min: 1, max: 4 })
  .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => taskArb(`t${i}`))));

// What the agents' runtimes run (operators/agent/runtimes/*: agentTypes); nothing runs Docker.
const runtimes: Record<string, string[]> = {
  Kubernetes: ["kubernetes"],
  Raw: ["process"],
  Docker: [],
};

t.test("placement never counts more onto a node than it has free", async (t) => {
  fc.assert(
    fc.property(clustersArb, tasksArb, (clusters, tasks) => {
      const result = placeJob({ tasks, clusters });
      if (!result.placed) return true;
      const load = new Map<string, Record<string, number>>();
      for (const p of result.tasks) {
        for (const a of p.nodes) {
          const key = `${p.cluster}/${a.node}`;
          const sum = load.get(key) ?? {};
          for (const r of RESOURCES) sum[r] = (sum[r] ?? 0) + (p.request[r] ?? 0) * a.replicas;
          load.set(key, sum);
        }
      }
      for (const [key, sum] of load) {
        const [c, n] = key.split("/");
        const node = clusters.find((x) => x.name === c)?.nodes.find((x) => x.name === n);
        if (!node) return false;
        for (const r of RESOURCES) if ((sum[r] ?? 0) > (node.free[r] ?? 0)) return false;
      }
      return true;
    }),
    { numRuns: 500 },
  );
  t.pass("no node over-committed in 500 random pools");
});

t.test("placement is all-or-nothing and every placed task meets its constraints", async (t) => {
  fc.assert(
    fc.property(clustersArb, tasksArb, fc.boolean(), (clusters, tasks, spanClusters) => {
      const result = placeJob({ tasks, clusters, spanClusters });
      if (!result.placed) return tasks.some((task) => task.name === result.task) && result.message.length > 0;
      if (result.tasks.map((p) => p.task).join() !== tasks.map((x) => x.name).join()) return false;
      // Without a Domain, one cluster for the whole Job.
      if (!spanClusters && new Set(result.tasks.map((p) => p.cluster)).size !== 1) return false;
      return result.tasks.every((p, i) => {
        const task = tasks[i] as PlacementTask;
        const cluster = clusters.find((c) => c.name === p.cluster);
        if (!cluster?.online || !runtimes[task.agentType]?.includes(cluster.runtime)) return false;
        const replicas = p.nodes.reduce((n, a) => n + a.replicas, 0);
        if (task.daemonSet ? p.nodes.length === 0 : replicas !== task.replicas) return false;
        return p.nodes.every((a) => {
          const node = cluster.nodes.find((n) => n.name === a.node);
          return (
            node?.schedulable &&
            node.ready &&
            Object.entries(task.nodeSelector).every(([k, v]) => node.labels[k] === v)
          );
        });
      });
    }),
    { numRuns: 500 },
  );
  t.pass("500 random Jobs placed whole or not at all");
});

t.test("placement is deterministic: the same pool in any order gives the same answer", async (t) => {
  fc.assert(
    fc.property(
      clustersArb.chain((clusters) =>
        fc.tuple(fc.constant(clusters), fc.shuffledSubarray(clusters, { minLength: clusters.length })),
      ),
      tasksArb,
      ([clusters, shuffled], tasks) => {
        const a = placeJob({ tasks, clusters });
        const b = placeJob({ tasks, clusters: shuffled });
        return JSON.stringify(a) === JSON.stringify(b);
      },
    ),
    { numRuns: 300 },
  );
  t.pass("order of clusters does not change the answer");
});

t.test("Jobs placed one after another through reservations never over-commit a node", async (t) => {
  fc.assert(
    fc.property(
      fc.array(tasksArb, { minLength: 1, maxLength: 6 }),
      fc.integer({ min: 1, max: 4 }),
      (jobs, gpus) => {
        const snapshot = new PlacementSnapshot();
        snapshot.setCluster({
          apiVersion: "rlinf.io/v1alpha1",
          kind: "Cluster",
          metadata: { name: "c" },
          spec: { runtime: "kubernetes" },
          status: { phase: "Online" },
        });
        for (const name of ["a", "b"]) {
          snapshot.setNode({
            apiVersion: "rlinf.io/v1alpha1",
            kind: "Node",
            metadata: { name, namespace: "agent-c", labels: { gpu: "true" } },
            status: {
              allocatable: { cpu: "4", memory: "4", "nvidia.com/gpu": String(gpus) },
              conditions: [{ type: "Ready", status: "True" }],
            },
          });
        }
        jobs.forEach((tasks, j) => {
          const k8s = tasks.map((task) => ({ ...task, agentType: "Kubernetes" as const }));
          const result = placeJob({ tasks: k8s, clusters: snapshot.clusters() });
          if (result.placed) for (const p of result.tasks) snapshot.reserve(`agent-c/j${j}-${p.task}`, p);
        });
        return snapshot
          .clusters()
          .every((c) => c.nodes.every((n) => RESOURCES.every((r) => (n.free[r] ?? 0) >= 0)));
      },
    ),
    { numRuns: 300 },
  );
  t.pass("free never negative after any sequence of placements");
});
