import t from "tap";
import { checkSchema } from "../../operators/api/index.ts";
import { type Doc, seedJob, seedObject, seedObjects } from "./helpers.ts";

function workload(job: ReturnType<typeof seedJob>, index: number): Doc {
  const task = job.spec.tasks[index] as { kubernetes: { workload: Doc } };
  return task.kubernetes.workload;
}

t.test("every object of the seed passes its kind's schema", async (t) => {
  const objects = seedObjects();
  t.equal(new Set(objects.map((doc) => doc.kind)).size, 12, "the fixture covers twelve kinds");
  for (const doc of objects) {
    t.same(checkSchema(doc), [], `${String(doc.kind)} ${String((doc.metadata as Doc).name)}`);
  }
});

t.test("a misspelt workload kind names the allowed kinds and what was written", async (t) => {
  const job = seedJob();
  workload(job, 1).kind = "Deploymnet";
  t.same(checkSchema(job), [
    {
      path: "/spec/tasks/1/kubernetes/workload/kind",
      rule: "schema/enum",
      message: 'must be one of Deployment, StatefulSet, DaemonSet, Job (got "Deploymnet")',
    },
  ]);
});

t.test("a missing required field is named at the object that lacks it", async (t) => {
  const domain = seedObject("Domain");
  domain.spec = {};
  t.same(checkSchema(domain), [
    { path: "/spec", rule: "schema/required", message: 'missing required field "cidr"' },
  ]);
});

t.test("an unknown field points at the field and suggests the likely one", async (t) => {
  const job = seedJob();
  const w = workload(job, 0);
  w.replica = w.replicas;
  delete w.replicas;
  t.same(checkSchema(job), [
    {
      path: "/spec/tasks/0/kubernetes/workload/replica",
      rule: "schema/additional-property",
      message: 'unknown field "replica" (did you mean "replicas"?)',
    },
  ]);
});

t.test("an unknown field with no near name gets no suggestion", async (t) => {
  const domain = seedObject("Domain");
  (domain.spec as Doc).colour = "blue";
  const [violation] = checkSchema(domain);
  t.equal(violation?.message, 'unknown field "colour"');
});

t.test("a CIDR outside prefix 8..30 is explained in words", async (t) => {
  for (const cidr of ["10.0.0.0/31", "10.0.0.0/7", "10.0.0/24", "300.0.0.0/24"]) {
    const domain = seedObject("Domain");
    (domain.spec as Doc).cidr = cidr;
    t.same(
      checkSchema(domain),
      [
        {
          path: "/spec/cidr",
          rule: "schema/pattern",
          message: `must be an IPv4 CIDR with a prefix length from 8 to 30, such as 10.0.1.0/24 (got "${cidr}")`,
        },
      ],
      cidr,
    );
  }
  for (const cidr of ["10.0.0.0/8", "192.168.4.0/30"]) {
    const domain = seedObject("Domain");
    (domain.spec as Doc).cidr = cidr;
    t.same(checkSchema(domain), [], cidr);
  }
});

t.test(
  "an error inside a pod template points into the template, checked by the Kubernetes schema",
  async (t) => {
    const job = seedJob();
    const template = workload(job, 0).template as { spec: { containers: Doc[]; restartPolicy?: string } };
    template.spec.containers[0]!.image = 42;
    template.spec.restartPolicy = "Sometimes";
    t.same(checkSchema(job), [
      {
        path: "/spec/tasks/0/kubernetes/workload/template/spec/containers/0/image",
        rule: "kubernetes/pod-template",
        message: "must be string (got 42)",
      },
      {
        path: "/spec/tasks/0/kubernetes/workload/template/spec/restartPolicy",
        rule: "kubernetes/pod-template",
        message: 'must be one of Always, Never, OnFailure (got "Sometimes")',
      },
    ]);
  },
);

t.test("a bad resource quantity in a template is one readable error, not ajv's oneOf cascade", async (t) => {
  const job = seedJob();
  const template = workload(job, 0).template as {
    spec: { containers: Array<{ resources: { limits: Doc } }> };
  };
  template.spec.containers[0]!.resources.limits["nvidia.com/gpu"] = "one";
  t.same(checkSchema(job), [
    {
      path: "/spec/tasks/0/kubernetes/workload/template/spec/containers/0/resources/limits/nvidia.com~1gpu",
      rule: "kubernetes/pod-template",
      message: 'must be a Kubernetes quantity such as 500m, 2Gi or 8 (got "one")',
    },
  ]);
});

t.test("a container without a name is a missing field of the Kubernetes schema", async (t) => {
  const job = seedJob();
  const template = workload(job, 1).template as { spec: { containers: Doc[] }; metadata: Doc };
  delete template.spec.containers[0]!.name;
  template.metadata.labels = "app=rollout";
  t.same(checkSchema(job), [
    {
      path: "/spec/tasks/1/kubernetes/workload/template/metadata/labels",
      rule: "kubernetes/pod-template",
      message: 'must be object (got "app=rollout")',
    },
    {
      path: "/spec/tasks/1/kubernetes/workload/template/spec/containers/0",
      rule: "kubernetes/pod-template",
      message: 'missing required field "name"',
    },
  ]);
});

t.test("a task without the runtime section its agentType names is one error at the task", async (t) => {
  const job = seedJob();
  const task = job.spec.tasks[1]!;
  task.raw = { command: ["python3", "rollout.py"] };
  delete task.kubernetes;
  t.same(checkSchema(job), [
    {
      path: "/spec/tasks/1",
      rule: "schema/exactly-one-runtime",
      message: 'agentType Kubernetes needs a "kubernetes" section instead of "raw"',
    },
  ]);
});

t.test("a task with a second runtime section is told which to remove", async (t) => {
  const job = seedJob();
  job.spec.tasks[0]!.docker = { image: "busybox" };
  t.same(checkSchema(job), [
    {
      path: "/spec/tasks/0",
      rule: "schema/exactly-one-runtime",
      message: 'agentType Kubernetes takes only a "kubernetes" section; remove "docker"',
    },
  ]);
});

t.test("the same rule on the hub's Task objects", async (t) => {
  const task = seedObject("Task");
  (task.spec as Doc).agentType = "Raw";
  t.same(checkSchema(task), [
    {
      path: "/spec",
      rule: "schema/exactly-one-runtime",
      message: 'agentType Raw needs a "raw" section instead of "kubernetes"',
    },
  ]);
});

t.test(
  "Ray annotations: a head needs the node count, a worker its head, neither the other's key",
  async (t) => {
    const cases: Array<[Doc, string]> = [
      [{ "rlinf.io/ray-role": "head" }, "a Ray head (rlinf.io/ray-role: head) needs"],
      [
        { "rlinf.io/ray-role": "head", "rlinf.io/ray-total-nodes": "2", "rlinf.io/ray-head-task-name": "x" },
        "a Ray head (rlinf.io/ray-role: head) needs",
      ],
      [{ "rlinf.io/ray-role": "worker" }, "a Ray worker (rlinf.io/ray-role: worker) needs"],
      [{ "rlinf.io/ray-total-nodes": "2" }, "rlinf.io/ray-total-nodes and rlinf.io/ray-head-task-name need"],
    ];
    for (const [annotations, start] of cases) {
      const job = seedJob();
      job.spec.tasks[0]!.annotations = annotations;
      const violations = checkSchema(job);
      t.equal(violations.length, 1, JSON.stringify(annotations));
      t.equal(violations[0]?.rule, "schema/ray-annotations");
      t.equal(violations[0]?.path, "/spec/tasks/0/annotations");
      t.ok(violations[0]?.message.startsWith(start), String(violations[0]?.message));
    }
  },
);

t.test("Ray total nodes must be a whole number of at least 1, as a string", async (t) => {
  for (const value of ["0", "two", "-1"]) {
    const job = seedJob();
    job.spec.tasks[0]!.annotations = { "rlinf.io/ray-role": "head", "rlinf.io/ray-total-nodes": value };
    t.same(
      checkSchema(job).map((v) => [v.path, v.rule]),
      [["/spec/tasks/0/annotations/rlinf.io~1ray-total-nodes", "schema/pattern"]],
      value,
    );
  }
  const job = seedJob();
  job.spec.tasks[0]!.annotations = { "rlinf.io/ray-role": "head", "rlinf.io/ray-total-nodes": 5 };
  t.same(checkSchema(job), [
    {
      path: "/spec/tasks/0/annotations/rlinf.io~1ray-total-nodes",
      rule: "schema/type",
      message: "must be string (got 5)",
    },
  ]);
});

t.test("an invalid label key is reported at the key", async (t) => {
  const job = seedJob();
  (job.metadata as Doc).labels = { "Bad Key": "x", good: "not ok!" };
  const violations = checkSchema(job);
  t.same(
    violations.map((v) => [v.path, v.rule]),
    [
      ["/metadata/labels/Bad Key", "schema/pattern"],
      ["/metadata/labels/good", "schema/pattern"],
    ],
  );
  t.match(violations[0]?.message, /^invalid key "Bad Key": must be a label key/);
  t.match(violations[1]?.message, /^must be a label value.*\(got "not ok!"\)$/);
});

t.test("names must be DNS-1123", async (t) => {
  const job = seedJob();
  (job.metadata as Doc).name = "PPO_run";
  const [violation] = checkSchema(job);
  t.equal(violation?.path, "/metadata/name");
  t.equal(violation?.rule, "schema/pattern");
  t.match(violation?.message, /^must be a DNS-1123 label.*\(got "PPO_run"\)$/);
});

t.test("a cluster-scoped kind refuses a namespace, a cluster's kinds require agent-<cluster>", async (t) => {
  const job = seedJob();
  (job.metadata as Doc).namespace = "default";
  t.same(checkSchema(job), [
    {
      path: "/metadata/namespace",
      rule: "schema/max-length",
      message: 'must not be set: this kind is cluster-scoped (got "default")',
    },
  ]);
  const node = seedObject("Node");
  (node.metadata as Doc).namespace = "beijing";
  t.same(checkSchema(node), [
    {
      path: "/metadata/namespace",
      rule: "schema/pattern",
      message: 'must be agent-<cluster>, where <cluster> is a Cluster name (got "beijing")',
    },
  ]);
  delete (node.metadata as Doc).namespace;
  t.same(checkSchema(node), [
    { path: "/metadata", rule: "schema/required", message: 'missing required field "namespace"' },
  ]);
});

t.test("node category labels are the value true only", async (t) => {
  const node = seedObject("Node");
  ((node.metadata as Doc).labels as Doc)["rlark.io/node-category-cloud"] = "yes";
  t.same(checkSchema(node), [
    {
      path: "/metadata/labels/rlark.io~1node-category-cloud",
      rule: "schema/const",
      message: 'must be "true" (got "yes")',
    },
  ]);
});

t.test("an Addon names its clusters by namespace or selector, exactly one way", async (t) => {
  const addon = seedObject("Addon");
  delete (addon.metadata as Doc).namespace;
  t.same(checkSchema(addon), [
    {
      path: "",
      rule: "schema/addon-target",
      message:
        "an Addon needs its clusters: set metadata.namespace to agent-<cluster> or set spec.clusterSelector",
    },
  ]);
  const both = seedObject("Addon");
  (both.spec as Doc).clusterSelector = { matchLabels: { region: "cn-north" } };
  t.same(
    checkSchema(both).map((v) => v.rule),
    ["schema/addon-target"],
  );
});

t.test("an Addon version must be semver", async (t) => {
  const addon = seedObject("Addon");
  (addon.spec as Doc).version = "v0.1";
  t.same(checkSchema(addon), [
    {
      path: "/spec/version",
      rule: "schema/pattern",
      message: 'must be a semantic version such as 0.1.0 (got "v0.1")',
    },
  ]);
});

t.test("Workflow templates are Job specs, checked the same way", async (t) => {
  const workflow = seedObject("Workflow") as Doc & { spec: { jobs: Array<{ template: { tasks: Doc[] } }> } };
  workflow.spec.jobs[1]!.template.tasks[0]!.role = "Learner";
  t.same(checkSchema(workflow), [
    {
      path: "/spec/jobs/1/template/tasks/0/role",
      rule: "schema/enum",
      message: 'must be one of Actor, Rollout, Env (got "Learner")',
    },
  ]);
  const policy = seedObject("Workflow");
  (policy.spec as Doc).failurePolicy = "StopSome";
  t.same(
    checkSchema(policy).map((v) => v.rule),
    ["schema/enum"],
  );
});

t.test("wrong types say what was expected and what was found", async (t) => {
  const job = seedJob();
  workload(job, 0).replicas = "2";
  (job.spec as Doc).stopped = "yes";
  t.same(checkSchema(job), [
    { path: "/spec/stopped", rule: "schema/type", message: 'must be boolean (got "yes")' },
    {
      path: "/spec/tasks/0/kubernetes/workload/replicas",
      rule: "schema/type",
      message: 'must be integer (got "2")',
    },
  ]);
});

t.test("timestamps must be RFC 3339", async (t) => {
  const job = seedJob();
  (job.status as Doc).startTime = "yesterday";
  t.same(checkSchema(job), [
    {
      path: "/status/startTime",
      rule: "schema/format",
      message: 'must be a valid date-time (got "yesterday")',
    },
  ]);
});

t.test("User roles and keys are checked, and a plain password is refused", async (t) => {
  const user = seedObject("User");
  (user.spec as Doc).roles = ["user", "root", "user"];
  (user.spec as Doc).sshPublicKeys = ["not a key"];
  (user.spec as Doc).passwordHash = "hunter2";
  t.same(
    checkSchema(user).map((v) => [v.path, v.rule]),
    [
      ["/spec/passwordHash", "schema/pattern"],
      ["/spec/roles", "schema/unique-items"],
      ["/spec/roles/1", "schema/enum"],
      ["/spec/sshPublicKeys/0", "schema/pattern"],
    ],
  );
});

t.test("a document of an unknown kind, or no kind, is one violation, never an exception", async (t) => {
  t.same(checkSchema({ apiVersion: "rlinf.io/v1alpha1", kind: "Robot" }), [
    {
      path: "/kind",
      rule: "schema/unknown-kind",
      message:
        'must be one of Job, Workflow, Domain, Addon, Cluster, Node, User, Team, AccessPolicy, SealedSecret, Bundle, Task, DomainPeer, AddonRelease, BundleRelease, Pod (got "Robot")',
    },
  ]);
  t.same(checkSchema({ apiVersion: "rlinf.io/v1alpha1" }), [
    { path: "", rule: "schema/required", message: 'missing required field "kind"' },
  ]);
  t.same(checkSchema({ kind: { toString: {} } }), [
    {
      path: "/kind",
      rule: "schema/unknown-kind",
      message:
        "must be one of Job, Workflow, Domain, Addon, Cluster, Node, User, Team, AccessPolicy, SealedSecret, Bundle, Task, DomainPeer, AddonRelease, BundleRelease, Pod (got an object)",
    },
  ]);
  t.same(checkSchema([] as unknown as Doc), [
    { path: "", rule: "schema/type", message: "must be object (got a list)" },
  ]);
  t.same(checkSchema(null as unknown as Doc), [
    { path: "", rule: "schema/type", message: "must be object (got null)" },
  ]);
});

t.test("the wrong apiVersion is a const violation", async (t) => {
  const domain = seedObject("Domain");
  domain.apiVersion = "rlinf.io/v1";
  t.same(checkSchema(domain), [
    { path: "/apiVersion", rule: "schema/const", message: 'must be "rlinf.io/v1alpha1" (got "rlinf.io/v1")' },
  ]);
});

t.test("violations come in document order, list indexes numerically", async (t) => {
  const job = seedJob();
  const tasks = job.spec.tasks;
  for (let i = 2; i < 12; i++) tasks.push({ ...structuredClone(tasks[1]!), name: `rollout-${i}` });
  tasks[2]!.role = "Bad";
  tasks[10]!.role = "Bad";
  t.same(
    checkSchema(job).map((v) => v.path),
    ["/spec/tasks/2/role", "/spec/tasks/10/role"],
  );
});

t.test("checking does not change the document", async (t) => {
  const job = seedJob();
  delete (job.spec as Doc).stopped;
  const before = structuredClone(job);
  checkSchema(job);
  t.same(job, before, "no defaults are filled in");
});

t.test("a Raw task's artifact must carry its SHA-256", async (t) => {
  const workflow = seedObject("Workflow") as Doc & { spec: { jobs: Array<{ template: { tasks: Doc[] } }> } };
  const raw = workflow.spec.jobs[1]!.template.tasks[0]!.raw as { artifact: Doc };
  delete raw.artifact.sha256;
  t.same(checkSchema(workflow), [
    {
      path: "/spec/jobs/1/template/tasks/0/raw/artifact",
      rule: "schema/required",
      message: 'missing required field "sha256"',
    },
  ]);
  raw.artifact.sha256 = "ABC";
  t.same(
    checkSchema(workflow).map((v) => v.message),
    ['must be 64 lowercase hexadecimal digits (got "ABC")'],
  );
});

t.test("a name that is too long is told its length, not the character rules", async (t) => {
  const job = seedJob();
  const name = "a".repeat(70);
  (job.metadata as Doc).name = name;
  t.same(checkSchema(job), [
    { path: "/metadata/name", rule: "schema/max-length", message: "must be at most 63 characters (got 70)" },
  ]);
  const cluster = seedObject("Cluster");
  (cluster.metadata as Doc).name = "c".repeat(60);
  t.same(checkSchema(cluster), [
    { path: "/metadata/name", rule: "schema/max-length", message: "must be at most 57 characters (got 60)" },
  ]);
});

t.test("an empty name is one violation, not also a pattern mismatch", async (t) => {
  const domain = seedObject("Domain");
  (domain.metadata as Doc).name = "";
  t.same(checkSchema(domain), [
    { path: "/metadata/name", rule: "schema/min-length", message: "must not be empty" },
  ]);
});

t.test(
  "an object as a store or kube-apiserver returns it, with its bookkeeping metadata, passes",
  async (t) => {
    const task = seedObject("Task");
    Object.assign(task.metadata as Doc, {
      uid: "5c1b2f4e-0000-4000-8000-000000000001",
      resourceVersion: "12345",
      generation: 2,
      creationTimestamp: "2026-06-25T03:20:30Z",
      finalizers: ["rlinf.io/cleanup"],
      ownerReferences: [
        {
          apiVersion: "rlinf.io/v1alpha1",
          kind: "Job",
          name: "ppo-cartpole-v1",
          uid: "u1",
          controller: true,
        },
      ],
      managedFields: [{ manager: "rlark-hub", operation: "Apply", fieldsType: "FieldsV1", fieldsV1: {} }],
    });
    t.same(checkSchema(task), []);
  },
);
