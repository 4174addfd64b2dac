// Readiness of an Addon's workloads from the fields `kubectl rollout status` reads.
import t from "tap";
import { rolloutProblem } from "../../../../operators/agent/runtimes/kubernetes/addons/addon-rollout.ts";

const meta = (kind: string, generation = 2) => ({
  apiVersion: "apps/v1",
  kind,
  metadata: { name: "x", namespace: "ns", generation },
});

t.test("a DaemonSet: observed, every scheduled pod updated and ready", async (t) => {
  const ds = (status: Record<string, number>) => ({ ...meta("DaemonSet"), status });
  t.equal(
    rolloutProblem(
      ds({ observedGeneration: 1, desiredNumberScheduled: 2, numberReady: 2, numberAvailable: 2 }),
    ),
    "DaemonSet ns/x: generation 2 not yet observed",
  );
  t.equal(
    rolloutProblem(
      ds({
        observedGeneration: 2,
        desiredNumberScheduled: 2,
        updatedNumberScheduled: 1,
        numberReady: 2,
        numberAvailable: 2,
      }),
    ),
    "DaemonSet ns/x: 1 of 2 pods updated",
  );
  t.equal(
    rolloutProblem(
      ds({
        observedGeneration: 2,
        desiredNumberScheduled: 2,
        updatedNumberScheduled: 2,
        numberReady: 2,
        numberAvailable: 1,
      }),
    ),
    "DaemonSet ns/x: 1 of 2 pods ready",
  );
  t.equal(
    rolloutProblem(
      ds({
        observedGeneration: 2,
        desiredNumberScheduled: 2,
        updatedNumberScheduled: 2,
        numberReady: 2,
        numberAvailable: 2,
      }),
    ),
    undefined,
  );
  t.equal(rolloutProblem(ds({ observedGeneration: 2 })), undefined, "no matching node: nothing to wait for");
});

t.test("a Deployment: observed, updated, no old replicas, available", async (t) => {
  const dep = (replicas: number, status: Record<string, number>) => ({
    ...meta("Deployment"),
    spec: { replicas },
    status,
  });
  t.equal(
    rolloutProblem(dep(3, { observedGeneration: 2, updatedReplicas: 2 })),
    "Deployment ns/x: 2 of 3 replicas updated",
  );
  t.equal(
    rolloutProblem(dep(3, { observedGeneration: 2, updatedReplicas: 3, replicas: 4, availableReplicas: 3 })),
    "Deployment ns/x: 1 old replicas still running",
  );
  t.equal(
    rolloutProblem(dep(3, { observedGeneration: 2, updatedReplicas: 3, replicas: 3, availableReplicas: 1 })),
    "Deployment ns/x: 1 of 3 replicas available",
  );
  t.equal(
    rolloutProblem(dep(3, { observedGeneration: 2, updatedReplicas: 3, replicas: 3, availableReplicas: 3 })),
    undefined,
  );
});

t.test("a StatefulSet counts ready replicas", async (t) => {
  const sts = {
    ...meta("StatefulSet"),
    spec: { replicas: 2 },
    status: { observedGeneration: 2, updatedReplicas: 2, replicas: 2, readyReplicas: 1 },
  };
  t.equal(rolloutProblem(sts), "StatefulSet ns/x: 1 of 2 replicas ready");
});
