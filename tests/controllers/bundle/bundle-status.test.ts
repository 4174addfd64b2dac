// A Bundle's status from its releases, pure: per cluster the revision, phase, message and every
// object's health (what status/bundle/<name>.yaml on the status branch shows), the least advanced
// phase overall; and the rlark/sync description counting the Bundles' objects.
import t from "tap";
import type { BundleRelease } from "../../../operators/api/index.ts";
import { bundleStatus } from "../../../operators/controllers/bundle/bundle-status.ts";
import { describeApplied } from "../../../operators/feedback/sync-status.ts";

const release = (cluster: string, status: BundleRelease["status"]): BundleRelease => ({
  apiVersion: "rlinf.io/v1alpha1",
  kind: "BundleRelease",
  metadata: { name: "site", namespace: `agent-${cluster}`, generation: 2 },
  spec: { namespace: "web", revision: "abc", prune: true, selfHeal: false, objects: [] },
  ...(status ? { status: { observedGeneration: 2, ...status } } : {}),
});

t.test("each cluster's objects are copied into the Bundle's status", async (t) => {
  const status = bundleStatus(3, [
    release("lab", {
      phase: "Drifted",
      revision: "abc",
      message: "drifted from git",
      objects: [
        {
          apiVersion: "v1",
          kind: "ConfigMap",
          name: "settings",
          health: "Healthy",
          drifted: ["/data/level"],
        },
      ],
    }),
    release("edge", {
      phase: "Failed",
      revision: "abb",
      message: "applying Service web/web: port out of range",
      objects: [{ kind: "Service", name: "web", health: "Degraded", message: "port out of range" }],
    }),
    release("new", undefined),
  ]);
  t.equal(status.phase, "Failed", "the least advanced phase");
  t.same(status.clusters, [
    {
      cluster: "edge",
      phase: "Failed",
      revision: "abb",
      message: "applying Service web/web: port out of range",
      objects: [{ kind: "Service", name: "web", health: "Degraded", message: "port out of range" }],
    },
    {
      cluster: "lab",
      phase: "Drifted",
      revision: "abc",
      message: "drifted from git",
      objects: [
        {
          apiVersion: "v1",
          kind: "ConfigMap",
          name: "settings",
          health: "Healthy",
          drifted: ["/data/level"],
        },
      ],
    },
    { cluster: "new", phase: "Pending" },
  ]);
  t.match(status.message, /edge: Failed \(applying Service web\/web: port out of range\); lab: Drifted/);
});

t.test("rlark/sync counts the Bundles' objects when they changed", async (t) => {
  t.equal(
    describeApplied({ created: 1, changed: 0, deleted: 0 }),
    "applied: 1 created, 0 changed, 0 deleted",
  );
  t.equal(
    describeApplied({
      created: 0,
      changed: 1,
      deleted: 0,
      bundleObjects: { created: 0, changed: 0, deleted: 0 },
    }),
    "applied: 0 created, 1 changed, 0 deleted",
  );
  t.equal(
    describeApplied({
      created: 0,
      changed: 1,
      deleted: 0,
      bundleObjects: { created: 2, changed: 1, deleted: 1 },
    }),
    "applied: 0 created, 1 changed, 0 deleted; Bundle objects: 2 created, 1 changed, 1 deleted",
  );
});
