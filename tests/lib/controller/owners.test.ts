import t from "tap";
import { ownerKeys, watchOwned } from "../../../operators/lib/controller/index.ts";
import type { KubeObject } from "../../../operators/lib/store/index.ts";

const dependent: KubeObject = {
  apiVersion: "rlinf.io/v1alpha1",
  kind: "Task",
  metadata: {
    name: "train-head",
    namespace: "agent-bj",
    ownerReferences: [
      { apiVersion: "rlinf.io/v1alpha1", kind: "Job", name: "train", uid: "u1", controller: true },
      { apiVersion: "rlinf.io/v1alpha1", kind: "Job", name: "other", uid: "u2" },
      { apiVersion: "rlinf.io/v1alpha1", kind: "Workflow", name: "wf", uid: "u3" },
    ],
  },
};

t.test("owner keys name the owners of the given kind, cluster-scoped by default", async (t) => {
  t.same([...ownerKeys("Job")(dependent, "MODIFIED")], ["train", "other"]);
  t.same([...ownerKeys("Job", { controllerOnly: true })(dependent, "DELETED")], ["train"]);
  t.same([...ownerKeys("Workflow")(dependent, "ADDED")], ["wf"]);
  t.same([...ownerKeys("Domain")(dependent, "ADDED")], []);
});

t.test("a namespaced owner lives in its dependent's namespace", async (t) => {
  t.same(
    [...ownerKeys("Job", { ownerNamespaced: true })(dependent, "ADDED")],
    ["agent-bj/train", "agent-bj/other"],
  );
});

t.test("watchOwned watches the dependent kind", async (t) => {
  const spec = watchOwned("Task", "Job");
  t.equal(spec.kind, "Task");
  t.same([...spec.mapToKeys(dependent, "ADDED")], ["train", "other"]);
});
