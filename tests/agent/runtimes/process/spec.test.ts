import t from "tap";
import { desiredPods, podRevision } from "../../../../operators/agent/runtimes/process/spec.ts";
import type { RuntimeTask } from "../../../../operators/agent/runtimes/types.ts";
import type { Task } from "../../../../operators/api/generated/task.ts";
import { rawTask } from "./helpers.ts";

t.test(
  "each replica of a Raw Task is a pod named <task>-<index>, a Job unless it says otherwise",
  async (t) => {
    const { pods } = desiredPods([rawTask("train-actor", { command: ["x"], replicas: 3 })]);
    t.same(
      pods.map((p) => [p.key, p.index, p.kind]),
      [
        ["agent-local/train-actor-0", 0, "Job"],
        ["agent-local/train-actor-1", 1, "Job"],
        ["agent-local/train-actor-2", 2, "Job"],
      ],
    );
  },
);

t.test("Tasks of other agent types are left to other runtimes", async (t) => {
  const kube: RuntimeTask = {
    metadata: { name: "k", namespace: "agent-local", uid: "u" },
    spec: { agentType: "Kubernetes", kubernetes: {} },
  };
  const { pods, rejected } = desiredPods([kube]);
  t.same(pods, []);
  t.same(rejected, []);
});

t.test("a Raw Task that cannot run is rejected with the reason", async (t) => {
  const { pods, rejected } = desiredPods([
    rawTask("no-command", { command: [] }),
    rawTask("bad-digest", { command: ["x"], artifact: { url: "https://example.com/x", sha256: "abc" } }),
  ]);
  t.same(pods, []);
  t.match(rejected, [
    { name: "no-command", message: /command/ },
    { name: "bad-digest", message: /sha256/ },
  ]);
});

t.test("scaling does not change the revision; a new spec or a new Task uid does", async (t) => {
  const base = rawTask("a", { command: ["x"], replicas: 1 }, { uid: "u1" });
  const scaled = rawTask("a", { command: ["x"], replicas: 5 }, { uid: "u1" });
  const changed = rawTask("a", { command: ["y"], replicas: 1 }, { uid: "u1" });
  const recreated = rawTask("a", { command: ["x"], replicas: 1 }, { uid: "u2" });
  t.equal(podRevision(base), podRevision(scaled));
  t.not(podRevision(base), podRevision(changed));
  t.not(podRevision(base), podRevision(recreated));
});

t.test("the revision does not depend on the order fields arrived in", async (t) => {
  const a = rawTask("a", { command: ["x"], env: [{ name: "A", value: "1" }], kind: "Job" }, { uid: "u" });
  const b = rawTask("a", { kind: "Job", env: [{ value: "1", name: "A" }], command: ["x"] }, { uid: "u" });
  t.equal(podRevision(a), podRevision(b));
});

t.test("a Task whose name could escape the state dir is rejected", async (t) => {
  const sneaky = rawTask("x", { command: ["x"] });
  sneaky.metadata.name = "../../etc";
  const slashed = rawTask("y", { command: ["x"] }, { namespace: "a/b" });
  const { pods, rejected } = desiredPods([sneaky, slashed]);
  t.same(pods, []);
  t.match(rejected, [{ message: /metadata.name/ }, { message: /metadata.namespace/ }]);
});

t.test("a Task as the hub stores it is handed to the runtime as it is", async (t) => {
  // Typed with the generated Task: this stops compiling if the contract drifts from the schema.
  const task: Task = {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Task",
    metadata: { name: "ppo-env", namespace: "agent-local", uid: "u-1", generation: 4 },
    spec: {
      job: "ppo",
      role: "Env",
      agentType: "Raw",
      raw: { command: ["./env-server"], env: [{ name: "EMPTY" }], replicas: 1 },
    },
  };
  const { pods, rejected } = desiredPods([task]);
  t.same(rejected, []);
  t.match(pods, [{ key: "agent-local/ppo-env-0", kind: "Job" }]);
});

t.test("a Task without a namespace is rejected", async (t) => {
  const task = rawTask("lost", { command: ["x"] });
  delete task.metadata.namespace;
  t.match(desiredPods([task]).rejected, [{ message: /namespace/ }]);
});
