import t, { type Test } from "tap";
import { type Cluster, type Job, PLACED_NODES_ANNOTATION, type Task } from "../../../operators/api/index.ts";
import { createJobController } from "../../../operators/controllers/job/index.ts";
import { FakeClock } from "../../../operators/lib/clock.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import { modify } from "../../../operators/lib/store/index.ts";
import { waitFor } from "../../helpers/wait-for.ts";
import { cluster, job, k8sTask, node, rawTask, type TaskTemplate } from "../placement/fixtures.ts";
import {
  getJob,
  type JobHarness,
  phaseIs,
  report,
  running,
  startJobHarness,
  tasksOf,
  waitForJob,
} from "./harness.ts";

const gpu = (name: string, gpus = 1) =>
  k8sTask(name, {
    kind: "Deployment",
    nodeSelector: { "nvidia.com/gpu": "true" },
    limits: { "nvidia.com/gpu": String(gpus) },
  });
const gpuNode = (c: string, name: string, gpus: string, extra: Parameters<typeof node>[2] = {}) =>
  node(c, name, {
    labels: { "nvidia.com/gpu": "true" },
    allocatable: { cpu: "32", memory: "128Gi", "nvidia.com/gpu": gpus, pods: "110" },
    ...extra,
  });

const scheduled = (j: Job) => j.status?.conditions?.find((c) => c.type === "Scheduled");

/** Two clusters, alpha four times beta's size, with an offline grace period of five minutes. */
async function alphaAndBeta(t: Test, { betaCordoned = false } = {}) {
  const hub = await startJobHarness(t, { offlineGracePeriod: 300_000 });
  await hub.store.create(cluster("alpha"));
  await hub.store.create(node("alpha", "a1", { allocatable: { cpu: "64", memory: "256Gi" } }));
  await hub.store.create(cluster("beta"));
  await hub.store.create(
    node("beta", "b1", { allocatable: { cpu: "16", memory: "64Gi" }, unschedulable: betaCordoned }),
  );
  return hub;
}

/** Cluster `name` Offline from now on, by the harness's clock (as when its agent's tunnel drops). */
async function goOffline(hub: JobHarness, name: string) {
  await modify<Cluster>(
    hub.store,
    "Cluster",
    "",
    name,
    (c) => {
      c.status = { phase: "Offline", lastTransitionTime: new Date(hub.clock.now()).toISOString() };
    },
    { status: true },
  );
}

t.test(
  "gang refusal: one task fits, the other does not, so no Task is created until room appears",
  async (t) => {
    const hub = await startJobHarness(t);
    await hub.store.create(cluster("beijing"));
    await hub.store.create(gpuNode("beijing", "gpu-node-01", "8"));
    await hub.store.create(gpuNode("beijing", "gpu-node-02", "8", { unschedulable: true }));
    await hub.store.create(job("gang", [gpu("learner", 4), gpu("actor-head", 8)]));
    const j = await waitForJob(hub.store, "gang", "Unschedulable", (x) => scheduled(x)?.status === "False");
    t.equal(j.status?.phase, "Pending");
    t.equal(scheduled(j)?.reason, "Unschedulable");
    t.equal(
      scheduled(j)?.message,
      "task actor-head: no Online cluster has a schedulable node matching nvidia.com/gpu=true with 8 nvidia.com/gpu free (beijing: gpu-node-01 has 4 of 8 nvidia.com/gpu free, gpu-node-02 cordoned)",
    );
    t.equal((await tasksOf(hub.store, "gang")).length, 0, "no Task for the task that fits either");
    t.match(j.status?.events?.at(-1), { type: "Warning", reason: "Unschedulable" });

    // The admin uncordons gpu-node-02: the Node change retries the Job.
    await modify(hub.store, "Node", "agent-beijing", "gpu-node-02", (n) => {
      (n.spec as { unschedulable?: boolean }).unschedulable = false;
    });
    const tasks = await waitFor("both Tasks created", async () => {
      const all = await tasksOf(hub.store, "gang");
      return all.length === 2 ? all : undefined;
    });
    t.same(tasks.map((x) => x.metadata.namespace).sort(), ["agent-beijing", "agent-beijing"]);
    // the nodes placement counted each on, for the agent's image pre-pull (ADR 0012)
    const placedOn = (name: string) =>
      tasks.find((x) => x.spec.task === name)?.metadata.annotations?.[PLACED_NODES_ANNOTATION];
    t.equal(placedOn("actor-head"), "gpu-node-02", "8 GPUs fit only on gpu-node-02");
    t.match(placedOn("learner"), /^gpu-node-0[12]$/, "the learner's one node");
    await waitForJob(hub.store, "gang", "Scheduled", (x) => scheduled(x)?.status === "True");
  },
);

t.test(
  "a placed Task holds its GPUs until it runs: a second Job waits instead of double booking",
  async (t) => {
    const hub = await startJobHarness(t);
    await hub.store.create(cluster("beijing"));
    await hub.store.create(gpuNode("beijing", "g1", "1"));
    await hub.store.create(job("first", [gpu("train")]));
    const [task] = await waitFor("first placed", async () => {
      const all = await tasksOf(hub.store, "first");
      return all.length === 1 ? all : undefined;
    });
    await hub.store.create(job("second", [gpu("train")]));
    const j = await waitForJob(hub.store, "second", "Unschedulable", (x) => scheduled(x)?.status === "False");
    t.match(scheduled(j)?.message, /g1 has 0 of 1 nvidia.com\/gpu free/);
    t.equal((await tasksOf(hub.store, "second")).length, 0);
    // The first Job is stopped; its Task goes, and the room with it.
    const first = await getJob(hub.store, "first");
    if (!first || !task) throw new Error("fixture");
    await hub.store.update({ ...first, spec: { ...first.spec, stopped: true } });
    await waitFor(
      "first's Task terminating",
      async () => (await tasksOf(hub.store, "first"))[0]?.metadata.deletionTimestamp,
    );
    await waitFor("second placed", async () => (await tasksOf(hub.store, "second")).length === 1);
  },
);

t.test(
  "a Pending Task on a cluster Offline past the grace period is placed elsewhere; a Running one is not moved",
  async (t) => {
    // beta is cordoned at first, so both Tasks start on alpha.
    const hub = await alphaAndBeta(t, { betaCordoned: true });
    const cpu = (name: string) => k8sTask(name, { kind: "Deployment", requests: { cpu: "1" } });
    // With a Domain, so its tasks may run in different clusters.
    await hub.store.create(job("wanderer", [cpu("pending-one"), cpu("running-one")], { domain: "lab" }));
    const placed = await waitFor("both Tasks on alpha", async () => {
      const all = await tasksOf(hub.store, "wanderer");
      return all.length === 2 && all.every((x) => x.metadata.namespace === "agent-alpha") ? all : undefined;
    });
    await modify(hub.store, "Node", "agent-beta", "b1", (n) => {
      (n.spec as { unschedulable?: boolean }).unschedulable = false;
    });
    const runningOne = placed.find((x) => x.spec.task === "running-one") as Task;
    await report(hub.store, runningOne, running);

    await goOffline(hub, "alpha");
    const offline = await waitForJob(hub.store, "wanderer", "ClusterOffline", (x) =>
      Boolean(x.status?.conditions?.some((c) => c.type === "ClusterOffline" && c.status === "True")),
    );
    t.match(
      offline.status?.conditions?.find((c) => c.type === "ClusterOffline")?.message,
      /task running-one runs on cluster alpha/,
    );
    t.notOk(
      (await tasksOf(hub.store, "wanderer")).some((x) => x.metadata.deletionTimestamp),
      "within the grace period nothing moves",
    );

    hub.clock.advance(300_001);
    hub.poke("wanderer");
    const moved = await waitFor("pending-one re-placed on beta", async () => {
      const all = await tasksOf(hub.store, "wanderer");
      const beta = all.find((x) => x.metadata.namespace === "agent-beta");
      return beta && all.some((x) => x.metadata.namespace === "agent-alpha" && x.metadata.deletionTimestamp)
        ? all
        : undefined;
    });
    t.equal(moved.find((x) => x.metadata.namespace === "agent-beta")?.spec.task, "pending-one");
    const stayed = moved.find((x) => x.spec.task === "running-one");
    t.equal(stayed?.metadata.namespace, "agent-alpha");
    t.notOk(stayed?.metadata.deletionTimestamp, "the running task is never moved silently");
    const j = await waitForJob(hub.store, "wanderer", "Replacing event", (x) =>
      Boolean(x.status?.events?.some((e) => e.reason === "Replacing")),
    );
    t.equal(j.status?.tasks?.find((x) => x.name === "pending-one")?.cluster, "beta");
  },
);

t.test("a restart mid-reconcile does not duplicate Tasks: the next controller adopts them", async (t) => {
  const hub = await startJobHarness(t);
  await hub.store.create(cluster("beijing"));
  await hub.store.create(cluster("shanghai"));
  await hub.store.create(node("beijing", "n1", { allocatable: { cpu: "8", memory: "8Gi" } }));
  await hub.store.create(node("shanghai", "n1", { allocatable: { cpu: "8", memory: "8Gi" } }));
  const cpu = (name: string) => k8sTask(name, { kind: "Deployment", requests: { cpu: "6" } });
  await hub.store.create(job("once", [cpu("a"), cpu("b")], { domain: "lab" }));
  const before = await waitFor("two Tasks", async () => {
    const all = await tasksOf(hub.store, "once");
    return all.length === 2 ? all : undefined;
  });
  await hub.stop();

  // As if the process died after creating the Tasks and before writing the Job's status.
  const { openSqliteStore } = await import("../../../operators/lib/store/index.ts");
  const store = openSqliteStore({ dataDir: hub.dir });
  t.teardown(() => store.close());
  const j = await store.get<Job>("Job", "", "once");
  if (!j) throw new Error("fixture");
  await store.updateStatus({ ...j, status: {} });

  // A fresh controller (empty snapshot, nothing remembered) reconciles the Job, twice.
  const fresh = createJobController();
  const context = { store, clock: new FakeClock(), logger: silentLogger, controller: "job", enqueue() {} };
  await fresh.reconcile({ key: "once", namespace: "", name: "once" }, context);
  await fresh.reconcile({ key: "once", namespace: "", name: "once" }, context);
  const after = (await store.list<Task>("Task", { labelSelector: "rlinf.io/job=once" })).items;
  t.same(
    after.map((x) => `${x.metadata.namespace}/${x.metadata.name}/${x.metadata.uid}`),
    before.map((x) => `${x.metadata.namespace}/${x.metadata.name}/${x.metadata.uid}`),
    "the same Tasks, none added",
  );
  const adopted = await store.get<Job>("Job", "", "once");
  t.equal(adopted?.status?.run, 1, "run 1 adopted, not a new run");
  t.equal(adopted?.status?.phase, "Pending");
});

t.test("two Jobs placed by one controller never book the same room", async (t) => {
  const hub = await startJobHarness(t);
  await hub.store.create(cluster("beijing"));
  await hub.store.create(gpuNode("beijing", "g1", "2"));
  for (const name of ["j1", "j2", "j3"]) await hub.store.create(job(name, [gpu("train")]));
  await waitFor("two placed, one waiting", async () => {
    const placed = (await hub.store.list<Task>("Task")).items.length;
    const waiting = (await hub.store.list<Job>("Job")).items.filter((x) => scheduled(x)?.status === "False");
    return placed === 2 && waiting.length === 1;
  });
  t.pass("2 GPUs, 2 Tasks");
  await waitFor("steady", async () => hub.manager.queueDepth("job") === 0);
  t.equal((await hub.store.list<Task>("Task")).items.length, 2);
  const pending = (await hub.store.list<Job>("Job")).items.filter(phaseIs("Pending"));
  t.equal(pending.length, 3, "none runs yet: no reports");
});

t.test(
  "a leftover Task of the same name is never overwritten: the Job's Task appears once it is gone",
  async (t) => {
    const hub = await startJobHarness(t);
    await hub.store.create(cluster("beijing"));
    await hub.store.create(node("beijing", "n1"));
    // Left by an earlier Job of the same name (another uid), its agent still cleaning up.
    const leftover = await hub.store.create<Task>({
      apiVersion: "rlinf.io/v1alpha1",
      kind: "Task",
      metadata: {
        name: "reborn-main",
        namespace: "agent-beijing",
        labels: { "rlinf.io/job": "reborn" },
        ownerReferences: [
          { apiVersion: "rlinf.io/v1alpha1", kind: "Job", name: "reborn", uid: "an-older-uid" },
        ],
        finalizers: ["rlark.io/agent-cleanup"],
      },
      spec: { job: "reborn", task: "main", run: 7, role: "Env", agentType: "Raw", raw: { command: ["old"] } },
    });
    await hub.store.create(job("reborn", [k8sTask("main", { requests: { cpu: "1" } })]));
    await waitForJob(hub.store, "reborn", "run 1 written", (x) => x.status?.run === 1);
    const same = await hub.store.get<Task>("Task", "agent-beijing", "reborn-main");
    t.equal(same?.metadata.uid, leftover.metadata.uid, "the leftover is untouched");
    t.equal(same?.spec.run, 7);

    await hub.store.delete("Task", "agent-beijing", "reborn-main");
    await modify<Task>(hub.store, "Task", "agent-beijing", "reborn-main", (x) => {
      x.metadata.finalizers = [];
    });
    const mine = await waitFor("the Job's own Task", async () => {
      const x = await hub.store.get<Task>("Task", "agent-beijing", "reborn-main");
      return x && x.metadata.uid !== leftover.metadata.uid ? x : undefined;
    });
    t.equal(mine.spec.run, 1);
    t.equal(mine.spec.agentType, "Kubernetes");
  },
);

t.test(
  "clusterSelector keeps a task in the clusters it names, even when another has more room",
  async (t) => {
    const hub = await startJobHarness(t);
    await hub.store.create(cluster("beijing", { labels: { "rlark.io/city": "beijing" } }));
    await hub.store.create(node("beijing", "big", { allocatable: { cpu: "256", memory: "1Ti" } }));
    await hub.store.create(cluster("shanghai", { labels: { "rlark.io/city": "shanghai" } }));
    await hub.store.create(node("shanghai", "small", { allocatable: { cpu: "4", memory: "8Gi" } }));
    const local = k8sTask("local", {
      requests: { cpu: "1" },
      clusterSelector: { matchLabels: { "rlark.io/city": "shanghai" } },
    });
    await hub.store.create(
      job("pinned", [local, k8sTask("anywhere", { requests: { cpu: "1" } })], { domain: "lab" }),
    );
    const tasks = await waitFor("two Tasks", async () => {
      const all = await tasksOf(hub.store, "pinned");
      return all.length === 2 ? all : undefined;
    });
    const where = Object.fromEntries(tasks.map((x) => [x.spec.task, x.metadata.namespace]));
    t.same(where, { local: "agent-shanghai", anywhere: "agent-beijing" });
  },
);

t.test(
  "a Raw task waits for a process agent instead of going to a kubernetes cluster that would drop it",
  async (t) => {
    const hub = await startJobHarness(t);
    await hub.store.create(cluster("beijing", { runtime: "kubernetes" }));
    await hub.store.create(node("beijing", "n1"));
    await hub.store.create(job("bare", [rawTask("env")]));
    const j = await waitForJob(hub.store, "bare", "Unschedulable", (x) => scheduled(x)?.status === "False");
    t.equal(j.status?.phase, "Pending");
    t.match(scheduled(j)?.message, /beijing: its agent's runtime kubernetes does not run Raw tasks/);
    t.equal((await tasksOf(hub.store, "bare")).length, 0);

    // A process agent connects: the Raw task goes there.
    await hub.store.create(cluster("local", { runtime: "process" }));
    await hub.store.create(node("local", "this-machine"));
    const [task] = await waitFor("the Raw Task created", async () => {
      const all = await tasksOf(hub.store, "bare");
      return all.length === 1 ? all : undefined;
    });
    t.equal(task?.metadata.namespace, "agent-local");
  },
);

t.test("a Docker task waits for a cluster whose agent runs Docker, and is created there", async (t) => {
  const hub = await startJobHarness(t);
  await hub.store.create(cluster("beijing", { runtime: "kubernetes" }));
  await hub.store.create(node("beijing", "n1"));
  await hub.store.create(cluster("local", { runtime: "process" }));
  await hub.store.create(node("local", "this-machine"));
  const camera: TaskTemplate = {
    name: "camera",
    role: "Env",
    agentType: "Docker",
    docker: { image: "cam:1" },
  };
  await hub.store.create(job("docked", [camera]));
  const j = await waitForJob(hub.store, "docked", "Unschedulable", (x) => scheduled(x)?.status === "False");
  t.equal(j.status?.phase, "Pending");
  t.match(scheduled(j)?.message, /local: its agent's runtime process does not run Docker tasks/);
  t.equal((await tasksOf(hub.store, "docked")).length, 0);
  // An edge machine's docker agent connects: the Docker task goes there.
  await hub.store.create(cluster("edge", { runtime: "docker" }));
  await hub.store.create(node("edge", "robot"));
  const [task] = await waitFor("the Docker Task created", async () => {
    const all = await tasksOf(hub.store, "docked");
    return all.length === 1 ? all : undefined;
  });
  t.equal(task?.metadata.namespace, "agent-edge");
});

t.test("a Job without a Domain runs all its tasks in one cluster, or waits saying why", async (t) => {
  const hub = await startJobHarness(t);
  await hub.store.create(cluster("beijing"));
  await hub.store.create(node("beijing", "n1", { allocatable: { cpu: "8", memory: "8Gi" } }));
  await hub.store.create(cluster("shanghai"));
  await hub.store.create(node("shanghai", "n1", { allocatable: { cpu: "8", memory: "8Gi" } }));
  const cpu = (name: string, n: string) => k8sTask(name, { kind: "Deployment", requests: { cpu: n } });

  // Too big for either cluster together, though each task fits somewhere: nothing is created.
  await hub.store.create(job("split", [cpu("a", "5"), cpu("b", "5")]));
  const j = await waitForJob(hub.store, "split", "Unschedulable", (x) => scheduled(x)?.status === "False");
  t.equal(j.status?.phase, "Pending");
  t.match(
    scheduled(j)?.message,
    /^no single Online cluster has room for every task, and a Job without a Domain runs all its tasks in one cluster \(/,
  );
  t.equal((await tasksOf(hub.store, "split")).length, 0);

  // Ray head and worker: each alone would take the emptier cluster; together they share one.
  await hub.store.create(job("ray", [cpu("head", "2"), cpu("worker", "2")]));
  const tasks = await waitFor("both Tasks", async () => {
    const all = await tasksOf(hub.store, "ray");
    return all.length === 2 ? all : undefined;
  });
  t.equal(new Set(tasks.map((x) => x.metadata.namespace)).size, 1, "one cluster for the whole Job");
});

t.test(
  "without a Domain a Pending Task on an Offline cluster is not moved away from a running one",
  async (t) => {
    const hub = await alphaAndBeta(t);
    const cpu = (name: string) => k8sTask(name, { kind: "Deployment", requests: { cpu: "1" } });
    await hub.store.create(job("anchored", [cpu("pending-one"), cpu("running-one")]));
    const placed = await waitFor("both Tasks on alpha", async () => {
      const all = await tasksOf(hub.store, "anchored");
      return all.length === 2 && all.every((x) => x.metadata.namespace === "agent-alpha") ? all : undefined;
    });
    await report(hub.store, placed.find((x) => x.spec.task === "running-one") as Task, running);
    await goOffline(hub, "alpha");
    hub.clock.advance(300_001);
    hub.poke("anchored");
    const j = await waitForJob(hub.store, "anchored", "says the pending task waits", (x) =>
      Boolean(
        x.status?.conditions?.some(
          (c) =>
            c.type === "ClusterOffline" && c.message?.includes("task pending-one waits for cluster alpha"),
        ),
      ),
    );
    t.match(
      j.status?.conditions?.find((c) => c.type === "ClusterOffline")?.message,
      "a Job without a Domain runs in one cluster, and task running-one runs there",
    );
    const now = await tasksOf(hub.store, "anchored");
    t.same(
      now
        .map((x) => `${x.metadata.namespace}/${x.spec.task}/${Boolean(x.metadata.deletionTimestamp)}`)
        .sort(),
      ["agent-alpha/pending-one/false", "agent-alpha/running-one/false"],
      "nothing moved to beta",
    );
  },
);

t.test(
  "without a Domain the rest of a run waits for the cluster its head is in, rather than going elsewhere",
  async (t) => {
    const hub = await alphaAndBeta(t);
    const head = k8sTask("actor-head", { kind: "Deployment", requests: { cpu: "1" }, head: true });
    const worker = k8sTask("worker", { kind: "Deployment", requests: { cpu: "1" } });
    await hub.store.create(job("ray", [head, worker]));
    await waitForJob(hub.store, "ray", "the worker planned on alpha", (x) =>
      Boolean(
        x.status?.tasks?.some((s) => s.name === "worker" && s.phase === "Scheduled" && s.cluster === "alpha"),
      ),
    );
    // alpha drops before the head runs; within the grace period the head stays there.
    await goOffline(hub, "alpha");
    const j = await waitForJob(hub.store, "ray", "the worker waits", (x) => scheduled(x)?.status === "False");
    t.match(scheduled(j)?.message, /a Job without a Domain runs in one cluster, and actor-head is in alpha$/);
    const tasks = await tasksOf(hub.store, "ray");
    t.same(
      tasks.map((x) => `${x.metadata.namespace}/${x.spec.task}`),
      ["agent-alpha/actor-head"],
      "nothing goes to beta",
    );
  },
);

t.test("a Task that opts into root (raw.runAsRoot) is on the Job's record at every placement", async (t) => {
  const hub = await startJobHarness(t);
  await hub.store.create(cluster("local", { runtime: "process" }));
  await hub.store.create(node("local", "this-machine"));
  const trusted = rawTask("trusted");
  trusted.raw = { ...trusted.raw, runAsRoot: true } as typeof trusted.raw;
  await hub.store.create(job("rooted", [trusted, rawTask("plain")]));
  const j = await waitForJob(hub.store, "rooted", "placed", (x) => scheduled(x)?.status === "True");
  const event = j.status?.events?.find((e) => e.reason === "RunAsRoot");
  t.match(event, { type: "Warning", message: "trusted run as root on the agent: raw.runAsRoot is set" });
  await hub.store.create(job("plain", [rawTask("plain")]));
  const plain = await waitForJob(hub.store, "plain", "placed", (x) => scheduled(x)?.status === "True");
  t.notOk(
    plain.status?.events?.some((e) => e.reason === "RunAsRoot"),
    "none for a Job without it",
  );
});
