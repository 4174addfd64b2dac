// Cluster objects → observed shapes: the numbers the hub places work by (requested) and the
// outcomes it computes Task phases from (exit codes, signals, Job results).
import type { V1Job, V1Node, V1Pod } from "@kubernetes/client-node";
import t from "tap";
import {
  observeNode,
  observePod,
  observeWorkload,
  podRequests,
  requestedByNode,
} from "../../../../operators/agent/runtimes/kubernetes/watch/observe.ts";
import {
  formatQuantity,
  parseQuantity,
} from "../../../../operators/agent/runtimes/kubernetes/watch/quantity.ts";

const pod = (
  name: string,
  node: string,
  phase: string,
  spec: Partial<NonNullable<V1Pod["spec"]>> = {},
): V1Pod => ({
  metadata: {
    name,
    namespace: "ns",
    labels: { "rlark.io/task": "ppo-actor", "rlinf.io/task": "actor", "rlinf.io/job": "ppo" },
  },
  spec: {
    nodeName: node,
    containers: [{ name: "main", resources: { requests: { cpu: "500m", memory: "1Gi" } } }],
    ...spec,
  },
  status: { phase },
});

t.test("quantities parse and print in Kubernetes notation", async (t) => {
  t.equal(parseQuantity("500m"), 0.5);
  t.equal(parseQuantity("2"), 2);
  t.equal(parseQuantity("1Gi"), 2 ** 30);
  t.equal(parseQuantity("1.5G"), 1.5e9);
  t.equal(parseQuantity("1e3"), 1000);
  t.ok(Number.isNaN(parseQuantity("lots")));
  t.equal(formatQuantity("cpu", 1500), "1500m");
  t.equal(formatQuantity("cpu", 2000), "2");
  t.equal(formatQuantity("memory", 3 * 2 ** 30), "3Gi");
  t.equal(formatQuantity("memory", 1000), "1000");
  t.equal(formatQuantity("nvidia.com/gpu", 3), "3");
});

t.test("requested sums the non-terminated pods bound to each node", async (t) => {
  const gpu = { resources: { requests: { "nvidia.com/gpu": "1" } } };
  const pods = [
    pod("a", "n1", "Running"),
    pod("b", "n1", "Pending", {
      containers: [
        { name: "main", ...gpu },
        { name: "x", resources: { requests: { cpu: "250m" } } },
      ],
    }),
    pod("done", "n1", "Succeeded"),
    pod("failed", "n1", "Failed"),
    pod("c", "n2", "Running"),
    { ...pod("unbound", "", "Pending") },
  ];
  const requested = requestedByNode(pods);
  t.same(
    requested.get("n1"),
    { cpu: "750m", memory: "1Gi", "nvidia.com/gpu": "1" },
    "finished pods do not count",
  );
  t.same(requested.get("n2"), { cpu: "500m", memory: "1Gi" });
  t.equal(requested.size, 2, "a pod not yet bound counts nowhere");
});

t.test("a pod's request counts sidecars and the largest init container as the scheduler does", async (t) => {
  const p = pod("p", "n", "Running", {
    containers: [{ name: "main", resources: { requests: { cpu: "1" } } }],
    initContainers: [
      { name: "sidecar", restartPolicy: "Always", resources: { requests: { cpu: "100m" } } },
      { name: "migrate", resources: { requests: { cpu: "2", memory: "4Gi" } } },
    ],
    overhead: { cpu: "50m" },
  });
  const r = podRequests(p);
  // migrate runs next to the sidecar: 2.1 cores > 1.1; memory only migrate asks for
  t.equal(r.get("cpu"), 2100 + 50);
  t.equal(r.get("memory"), 4 * 2 ** 30);
});

t.test("a container killed by a signal reports the exit code and the signal", async (t) => {
  const p = pod("p", "n", "Failed");
  p.status = {
    phase: "Failed",
    podIP: "10.0.0.5",
    containerStatuses: [
      {
        name: "main",
        image: "x",
        imageID: "",
        ready: false,
        restartCount: 2,
        state: {
          terminated: {
            exitCode: 137,
            signal: 9,
            reason: "OOMKilled",
            finishedAt: new Date("2026-01-01T00:00:00Z"),
          },
        },
      },
    ],
  };
  const o = observePod(p, 4, 7);
  t.match(o, {
    phase: "Failed",
    state: "Terminated",
    exitCode: 137,
    signal: "SIGKILL",
    reason: "OOMKilled",
    restarts: 2,
    index: 4,
    generation: 7,
    task: "ppo-actor",
    job: "ppo",
    finishTime: "2026-01-01T00:00:00.000Z",
  });
  t.equal(o.ready, false);
});

t.test("a pod being deleted is reported terminating and not ready", async (t) => {
  const p = pod("p", "n", "Running");
  p.metadata = { ...p.metadata, deletionTimestamp: new Date() };
  p.status = { ...p.status, conditions: [{ type: "Ready", status: "True" }] };
  t.match(observePod(p, 0), { terminating: true, ready: false, reason: "Terminating" });
});

t.test("every container is reported under its own name and state, in the pod's order", async (t) => {
  const p = pod("two", "n", "Running", {
    containers: [
      { name: "trainer", image: "registry.local/trainer:1" },
      { name: "log-shipper", image: "registry.local/shipper:2" },
      { name: "not-started", image: "registry.local/late:3" },
    ],
  });
  p.status = {
    phase: "Running",
    containerStatuses: [
      {
        name: "log-shipper",
        image: "registry.local/shipper:2",
        imageID: "",
        ready: false,
        restartCount: 3,
        state: { waiting: { reason: "CrashLoopBackOff", message: "back-off 40s" } },
        lastState: { terminated: { exitCode: 2, finishedAt: new Date("2026-01-01T00:00:00Z") } },
      },
      {
        name: "trainer",
        image: "registry.local/trainer:1",
        imageID: "",
        ready: true,
        restartCount: 0,
        state: { running: { startedAt: new Date("2026-01-01T00:00:01Z") } },
      },
    ],
  };
  t.same(observePod(p, 0).containers, [
    {
      name: "trainer",
      image: "registry.local/trainer:1",
      ready: true,
      restartCount: 0,
      state: "Running",
      startedAt: "2026-01-01T00:00:01.000Z",
    },
    {
      name: "log-shipper",
      image: "registry.local/shipper:2",
      ready: false,
      restartCount: 3,
      state: "Waiting",
      reason: "CrashLoopBackOff",
      message: "back-off 40s",
      exitCode: 2,
    },
    { name: "not-started", image: "registry.local/late:3", ready: false, restartCount: 0, state: "Waiting" },
  ]);
});

t.test("a StatefulSet pod's ordinal wins over the fallback index", async (t) => {
  const p = pod("sts-3", "n", "Running");
  p.metadata!.labels = { ...p.metadata!.labels, "apps.kubernetes.io/pod-index": "3" };
  t.equal(observePod(p, 0).index, 3);
});

t.test("a failed Job reports the failing pod's exit code", async (t) => {
  const job: V1Job = {
    metadata: {
      name: "ppo-eval",
      namespace: "ns",
      labels: { "rlark.io/task": "ppo-eval" },
      annotations: { "rlark.io/task-uid": "u1", "rlark.io/task-generation": "2" },
    },
    spec: { parallelism: 2, template: {} },
    status: {
      failed: 1,
      succeeded: 1,
      conditions: [{ type: "Failed", status: "True", reason: "BackoffLimitExceeded" }],
    },
  };
  const ok = pod("ok", "n", "Succeeded");
  ok.status!.containerStatuses = [
    {
      name: "main",
      image: "",
      imageID: "",
      ready: false,
      restartCount: 0,
      state: { terminated: { exitCode: 0 } },
    },
  ];
  const bad = pod("bad", "n", "Failed");
  bad.status!.containerStatuses = [
    {
      name: "main",
      image: "",
      imageID: "",
      ready: false,
      restartCount: 0,
      state: { terminated: { exitCode: 3 } },
    },
  ];
  t.match(observeWorkload("Job", job, [ok, bad]), {
    kind: "Job",
    task: "ppo-eval",
    taskUid: "u1",
    generation: 2,
    finished: "Failed",
    exitCode: 3,
    failed: 1,
    succeeded: 1,
    replicas: 2,
    reason: "BackoffLimitExceeded",
  });
});

t.test("a node with a control-plane role is marked so", async (t) => {
  const node: V1Node = {
    metadata: { name: "cp", labels: { "node-role.kubernetes.io/control-plane": "" } },
    status: { capacity: { cpu: "4" }, conditions: [{ type: "DiskPressure", status: "True" }] },
  };
  const o = observeNode(node, undefined, "1.0.0");
  t.equal(o.controlPlane, true);
  t.same(o.requested, {});
  t.same(o.conditions, [{ type: "DiskPressure", status: "True" }], "DiskPressure is passed on");
});
