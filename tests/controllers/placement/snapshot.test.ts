import t from "tap";
import type { Task } from "../../../operators/api/index.ts";
import {
  PlacementSnapshot,
  placeJob,
  placementTask,
} from "../../../operators/controllers/placement/index.ts";
import { tempStore } from "../../lib/store/helpers.ts";
import { cluster, k8sTask, node } from "./fixtures.ts";

const gpuBox = () =>
  node("beijing", "g1", { allocatable: { cpu: "32", memory: "128Gi", "nvidia.com/gpu": "2", pods: "110" } });
const oneGpu = () => placementTask(k8sTask("train", { limits: { "nvidia.com/gpu": "1" } }));

function placedTask(name: string, phase?: "Pending" | "Running"): Task {
  return {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Task",
    metadata: { name, namespace: "agent-beijing", resourceVersion: "5" },
    spec: { job: name, task: "train", ...k8sTask("train", { limits: { "nvidia.com/gpu": "1" } }) },
    ...(phase ? { status: { phase } } : {}),
  };
}

const freeGpus = (snapshot: PlacementSnapshot) =>
  snapshot.clusters()[0]?.nodes[0]?.free["nvidia.com/gpu"] ?? Number.NaN;

t.test("a placed Task holds its request until its pods are reported running", async (t) => {
  const snapshot = new PlacementSnapshot();
  snapshot.setCluster(cluster("beijing"));
  snapshot.setNode(gpuBox());
  t.equal(freeGpus(snapshot), 2000);
  snapshot.observeTask(placedTask("a"));
  t.equal(freeGpus(snapshot), 1000, "a Task not yet running is reserved");
  snapshot.observeTask(placedTask("b", "Pending"));
  t.equal(freeGpus(snapshot), 0);
  const full = placeJob({ tasks: [oneGpu()], clusters: snapshot.clusters() });
  t.notOk(full.placed, "a third GPU task does not fit while two are reserved");
  // The agent reports a running: its request is now in the node's `requested`.
  snapshot.observeTask(placedTask("a", "Running"));
  snapshot.setNode(
    node("beijing", "g1", {
      allocatable: { cpu: "32", memory: "128Gi", "nvidia.com/gpu": "2", pods: "110" },
      requested: { "nvidia.com/gpu": "1" },
    }),
  );
  t.equal(freeGpus(snapshot), 0, "counted once, by the node report, not twice");
  snapshot.observeTask(placedTask("b"), true);
  t.equal(freeGpus(snapshot), 1000, "a deleted Task releases its reservation");
});

t.test("an older event never overwrites a newer node report", async (t) => {
  const snapshot = new PlacementSnapshot();
  snapshot.setCluster(cluster("beijing"));
  const newer = gpuBox();
  newer.metadata.resourceVersion = "9";
  snapshot.setNode(newer);
  const older = node("beijing", "g1", { allocatable: { "nvidia.com/gpu": "0" } });
  older.metadata.resourceVersion = "3";
  snapshot.setNode(older);
  t.equal(freeGpus(snapshot), 2000);
});

t.test("load fills the snapshot from the store, Task reservations included", async (t) => {
  const { store } = tempStore(t);
  await store.create(cluster("beijing"));
  await store.create(gpuBox());
  const { resourceVersion: _rv, ...meta } = placedTask("a").metadata;
  await store.create({ ...placedTask("a"), metadata: meta });
  const snapshot = new PlacementSnapshot();
  await snapshot.load(store);
  t.equal(snapshot.clusters().length, 1);
  t.equal(freeGpus(snapshot), 1000);
  t.ok(snapshot.isReserved("agent-beijing/a"));
});

t.test(
  "a Job's plans are released together; a plan that became a Task is no longer one of them",
  async (t) => {
    const snapshot = new PlacementSnapshot();
    snapshot.setCluster(cluster("beijing"));
    snapshot.setNode(gpuBox());
    const fit = (n: number) => {
      const result = placeJob({ tasks: [oneGpu()], clusters: snapshot.clusters() });
      if (!result.placed || !result.tasks[0]) throw new Error(`placement ${n} failed`);
      return result.tasks[0];
    };
    snapshot.reserve("plan/ppo/a", fit(1), "plans/ppo");
    snapshot.reserve("plan/ppo/b", fit(2), "plans/ppo");
    t.equal(freeGpus(snapshot), 0);
    snapshot.rekey("plan/ppo/a", "agent-beijing/ppo-a");
    t.equal(freeGpus(snapshot), 0, "moving the reservation never frees it");
    snapshot.releaseGroup("plans/ppo");
    t.equal(freeGpus(snapshot), 1000, "the remaining plan went");
    t.ok(snapshot.isReserved("agent-beijing/ppo-a"), "the Task's reservation stays");
    snapshot.rekey("agent-beijing/ppo-a", "plan/ppo/a", "plans/ppo");
    snapshot.releaseGroup("plans/ppo");
    t.equal(freeGpus(snapshot), 2000, "moved back into the group, released with it");
  },
);

t.test("only changes placement reads count: a heartbeat is not one, a cordon is", async (t) => {
  const snapshot = new PlacementSnapshot();
  t.ok(snapshot.setCluster(cluster("beijing")), "a new cluster");
  t.notOk(snapshot.setCluster(cluster("beijing", { lastTransitionTime: "2026-11-29T12:00:00Z" })));
  t.ok(snapshot.setCluster(cluster("beijing", { online: false })), "going Offline");
  t.ok(snapshot.setNode(gpuBox()), "a new node");
  const heartbeat = gpuBox();
  if (heartbeat.status) heartbeat.status.lastHeartbeatTime = "2026-11-29T12:00:10Z";
  t.notOk(snapshot.setNode(heartbeat));
  t.ok(
    snapshot.setNode({ ...gpuBox(), spec: { unschedulable: true } }),
    "a cordon changes what placement sees",
  );
});
