// The offline step on its own: pure over the placement snapshot and a status draft, so its time
// is just the reconcile's `now` and no store or clock is needed.

import t from "tap";
import type { Job, Task } from "../../../operators/api/index.ts";
import { taskObject } from "../../../operators/controllers/job/index.ts";
import { OfflineClusters } from "../../../operators/controllers/job/offline-clusters.ts";
import { StatusDraft } from "../../../operators/controllers/job/status-draft.ts";
import { PlacementSnapshot } from "../../../operators/controllers/placement/index.ts";
import { cluster, job, k8sTask } from "../placement/fixtures.ts";

const GRACE = 300_000;
const T0 = Date.UTC(2026, 10, 29, 12, 0, 0);

function setUp(withDomain: boolean) {
  const snapshot = new PlacementSnapshot();
  const offline = new OfflineClusters(snapshot, GRACE);
  const wanderer: Job = job("wanderer", [k8sTask("a"), k8sTask("b")], withDomain ? { domain: "lab" } : {});
  wanderer.metadata.uid = "uid-1";
  const [a, b] = wanderer.spec.tasks.map((template) => taskObject(wanderer, template, "alpha", 1));
  if (!a || !b) throw new Error("fixture");
  const current = new Map<string, Task>([
    ["a", a],
    ["b", b],
  ]);
  const review = (now: number) => offline.review(new StatusDraft(wanderer, now), wanderer, current);
  return { snapshot, wanderer, b, current, review };
}

t.test(
  "a cluster that reports no transition time is Offline from when it was first noticed, until it is Online again",
  async (t) => {
    const { snapshot, review } = setUp(true);
    // No lastTransitionTime and no heartbeat: only this process's memory dates the outage.
    snapshot.setCluster(cluster("alpha", { online: false }));

    t.same(review(T0), { replace: new Map(), requeueAfter: GRACE }, "the grace period starts when noticed");
    t.same(
      review(T0 + 100_000).requeueAfter,
      GRACE - 100_000,
      "and runs from that moment, not from each look",
    );
    const late = review(T0 + GRACE);
    t.same([...late.replace.keys()], ["a", "b"], "past the grace period both unstarted Tasks are replaced");

    // Online in between: the next outage is dated afresh.
    snapshot.setCluster(cluster("alpha"));
    t.same(review(T0 + GRACE + 1), { replace: new Map() }, "Online: nothing to do");
    snapshot.setCluster(cluster("alpha", { online: false }));
    t.equal(review(T0 + 2 * GRACE).requeueAfter, GRACE, "a new outage waits a whole grace period again");
  },
);

t.test("the draft says what moved and what cannot move", async (t) => {
  const { snapshot, wanderer, b, current } = setUp(false);
  snapshot.setCluster(cluster("alpha", { online: false, lastTransitionTime: new Date(T0).toISOString() }));
  current.set("b", { ...b, status: { phase: "Running" } });
  const draft = new StatusDraft(wanderer, T0 + GRACE + 1);
  const review = new OfflineClusters(snapshot, GRACE).review(draft, wanderer, current);

  t.same([...review.replace.keys()], [], "without a Domain, a task stays where another of its Job runs");
  const offline = draft.status.conditions?.find((c) => c.type === "ClusterOffline");
  t.equal(offline?.status, "True");
  t.match(offline?.message, /task b runs on cluster alpha, which is Offline; it is not moved/);
  t.match(offline?.message, /task a waits for cluster alpha.*task b runs there/);
});
