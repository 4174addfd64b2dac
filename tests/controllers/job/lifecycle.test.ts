import t from "tap";
import { PLACED_NODES_ANNOTATION, type Task } from "../../../operators/api/index.ts";
import { waitFor } from "../../helpers/wait-for.ts";
import { job as anyJob, cluster, k8sTask, node } from "../placement/fixtures.ts";
import {
  getJob,
  type JobHarness,
  phaseIs,
  releaseCleanup,
  report,
  running,
  startJobHarness,
  succeeded,
  tasksOf,
  waitForJob,
} from "./harness.ts";

async function pool(hub: JobHarness): Promise<void> {
  await hub.store.create(cluster("beijing"));
  await hub.store.create(
    node("beijing", "gpu-node-01", {
      labels: { "nvidia.com/gpu": "true" },
      allocatable: { cpu: "32", memory: "128Gi", "nvidia.com/gpu": "8", pods: "110" },
    }),
  );
  await hub.store.create(cluster("shanghai-edge", { labels: { "rlark.io/city": "shanghai" } }));
  await hub.store.create(
    node("shanghai-edge", "arm-01", {
      labels: { "rlark.io/node-category-robot": "true" },
      allocatable: { cpu: "8", memory: "16Gi", pods: "20" },
    }),
  );
}

// The GPU task and the robot task live in different clusters: these Jobs have a Domain so they may
// span them (a Job without one runs in one cluster).
const job = (...[name, tasks, extra]: Parameters<typeof anyJob>) =>
  anyJob(name, tasks, { domain: "lab", ...extra });

const train = (kind: "Job" | "Deployment" = "Job") =>
  k8sTask("trainer", { kind, nodeSelector: { "nvidia.com/gpu": "true" }, limits: { "nvidia.com/gpu": "1" } });
const policy = (kind: "Job" | "Deployment" = "Job") =>
  k8sTask("policy", {
    kind,
    nodeSelector: { "rlark.io/node-category-robot": "true" },
    requests: { cpu: "1" },
  });

async function waitForTasks(hub: JobHarness, name: string, n: number, run = 1): Promise<Task[]> {
  return waitFor(`${n} Tasks of ${name} run ${run}`, async () => {
    const tasks = (await tasksOf(hub.store, name)).filter(
      (x) => x.metadata.labels?.["rlark.io/run"] === String(run) && !x.metadata.deletionTimestamp,
    );
    return tasks.length === n ? tasks : undefined;
  });
}

const byTask = (tasks: Task[], task: string) => {
  const found = tasks.find((x) => x.spec.task === task);
  if (!found) throw new Error(`no Task for ${task}`);
  return found;
};

t.test(
  "a Job goes Pending → Running → Succeeded as its Tasks report, one Task per template across clusters",
  async (t) => {
    const hub = await startJobHarness(t);
    await pool(hub);
    const created = await hub.store.create(job("ppo", [train(), policy()], { domain: "lab" }));
    const tasks = await waitForTasks(hub, "ppo", 2);
    const trainer = byTask(tasks, "trainer");
    const robot = byTask(tasks, "policy");
    t.equal(trainer.metadata.name, "ppo-trainer");
    t.equal(trainer.metadata.namespace, "agent-beijing", "the GPU task goes to the GPU cluster");
    t.equal(robot.metadata.namespace, "agent-shanghai-edge", "the robot task goes to the edge cluster");
    t.same(trainer.metadata.labels, {
      "rlinf.io/job": "ppo",
      "rlinf.io/task": "trainer",
      "rlark.io/run": "1",
    });
    t.same(trainer.metadata.finalizers, ["rlark.io/agent-cleanup"]);
    t.match(trainer.metadata.ownerReferences, [
      { kind: "Job", name: "ppo", uid: created.metadata.uid, controller: true },
    ]);
    t.match(trainer.spec, { job: "ppo", task: "trainer", run: 1, domain: "lab", agentType: "Kubernetes" });
    t.notOk("clusterSelector" in trainer.spec, "placement-only fields stay on the Job");

    let j = await waitForJob(hub.store, "ppo", "Pending and Scheduled", (x) =>
      Boolean(x.status?.conditions?.some((c) => c.type === "Scheduled" && c.status === "True")),
    );
    t.equal(j.status?.phase, "Pending");
    t.same(j.metadata.finalizers, ["rlark.io/job-stop"]);
    t.match(
      j.status?.conditions?.find((c) => c.type === "Scheduled")?.message,
      "trainer → beijing, policy → shanghai-edge",
    );

    await report(hub.store, trainer, running);
    j = await waitForJob(
      hub.store,
      "ppo",
      "trainer Running",
      (x) => x.status?.tasks?.[0]?.phase === "Running",
    );
    t.equal(j.status?.phase, "Pending", "one task running is not enough");
    await report(hub.store, robot, running);
    j = await waitForJob(hub.store, "ppo", "Running", phaseIs("Running"));
    t.match(
      j.status?.conditions?.find((c) => c.type === "Ready"),
      { status: "True", reason: "TasksRunning" },
    );

    await report(hub.store, trainer, succeeded);
    j = await waitForJob(
      hub.store,
      "ppo",
      "trainer Succeeded",
      (x) => x.status?.tasks?.[0]?.phase === "Succeeded",
    );
    t.equal(j.status?.phase, "Running", "still running while the policy runs");
    await report(hub.store, robot, succeeded);
    j = await waitForJob(hub.store, "ppo", "Succeeded", phaseIs("Succeeded"));
    t.match(
      j.status?.conditions?.find((c) => c.type === "Complete"),
      { status: "True" },
    );
    t.ok(j.status?.completionTime);
    t.same(
      j.status?.events?.map((e) => e.reason),
      ["RunStarted", "Scheduled", "Running", "Succeeded"],
      "events explain each transition",
    );
  },
);

t.test("a failed task fails the Job with its reason and exit code", async (t) => {
  const hub = await startJobHarness(t);
  await pool(hub);
  await hub.store.create(job("bad", [train(), policy()]));
  const tasks = await waitForTasks(hub, "bad", 2);
  await report(hub.store, byTask(tasks, "trainer"), running);
  await report(hub.store, byTask(tasks, "policy"), {
    phase: "Failed",
    reason: "Error",
    exitCode: 3,
    message: "container main exited",
  });
  const j = await waitForJob(hub.store, "bad", "Failed", phaseIs("Failed"));
  const failed = j.status?.conditions?.find((c) => c.type === "Failed");
  t.match(failed, { status: "True", reason: "TaskFailed" });
  t.equal(failed?.message, "task policy failed: Error (exit code 3): container main exited");
  t.match(
    j.status?.tasks?.find((x) => x.name === "policy"),
    { phase: "Failed", exitCode: 3 },
  );
  t.equal(j.status?.events?.at(-1)?.type, "Warning");
});

t.test("a Job whose tasks are all long-running stays Running", async (t) => {
  const hub = await startJobHarness(t);
  await pool(hub);
  await hub.store.create(job("serve", [train("Deployment"), policy("Deployment")]));
  const tasks = await waitForTasks(hub, "serve", 2);
  for (const task of tasks) await report(hub.store, task, running);
  await waitForJob(hub.store, "serve", "Running", phaseIs("Running"));
  // Reports keep arriving; nothing ever finishes.
  for (const task of tasks) await report(hub.store, task, { ...running, message: "still serving" });
  await waitForJob(hub.store, "serve", "saw the new reports", (x) =>
    Boolean(x.status?.tasks?.every((s) => s.message === "still serving")),
  );
  t.equal((await getJob(hub.store, "serve"))?.status?.phase, "Running");
});

t.test("the head task is created first, and the others once it runs", async (t) => {
  const hub = await startJobHarness(t);
  await pool(hub);
  const head = {
    ...train("Deployment"),
    name: "actor-head",
    head: true,
    annotations: { "rlinf.io/ray-role": "head" as const, "rlinf.io/ray-total-nodes": "2" },
  };
  await hub.store.create(job("ray", [policy("Deployment"), head]));
  const [first] = await waitForTasks(hub, "ray", 1);
  t.equal(first?.spec.task, "actor-head");
  const { [PLACED_NODES_ANNOTATION]: placedNodes, ...annotations } = first?.metadata.annotations ?? {};
  t.match(placedNodes, /^\S+$/, "and the node placement counted it on, for image pre-pull");
  t.same(
    annotations,
    { "rlinf.io/ray-role": "head", "rlinf.io/ray-total-nodes": "2" },
    "the Ray keys reach the Task's own annotations",
  );
  const j = await waitForJob(hub.store, "ray", "the policy planned", (x) =>
    Boolean(x.status?.tasks?.some((s) => s.name === "policy" && s.phase === "Scheduled")),
  );
  t.equal(
    j.status?.tasks?.find((s) => s.name === "policy")?.cluster,
    "shanghai-edge",
    "planned with the gang",
  );
  t.equal((await tasksOf(hub.store, "ray")).length, 1, "only the head exists while it is not running");
  if (first) await report(hub.store, first, running);
  const both = await waitForTasks(hub, "ray", 2);
  t.equal(byTask(both, "policy").metadata.namespace, "agent-shanghai-edge");
});

t.test(
  "a stopped Job deletes its Tasks and waits for cleanup, then a fresh run starts when cleared",
  async (t) => {
    const hub = await startJobHarness(t);
    await pool(hub);
    await hub.store.create(job("stoppable", [train("Deployment"), policy("Deployment")]));
    const tasks = await waitForTasks(hub, "stoppable", 2);
    for (const task of tasks) await report(hub.store, task, running);
    await waitForJob(hub.store, "stoppable", "Running", phaseIs("Running"));

    await modify(hub, "stoppable", (spec) => {
      spec.stopped = true;
    });
    let j = await waitForJob(hub.store, "stoppable", "Stopping", phaseIs("Stopping"));
    const terminating = await waitFor("Tasks carry a deletionTimestamp", async () => {
      const all = await tasksOf(hub.store, "stoppable");
      return all.length === 2 && all.every((x) => x.metadata.deletionTimestamp) ? all : undefined;
    });
    t.match(
      j.status?.conditions?.find((c) => c.type === "Ready"),
      { status: "False", reason: "Stopping" },
    );
    t.ok(j.status?.tasks?.every((x) => x.phase === "Stopping"));

    // One agent cleans up; the Job still waits for the other.
    await releaseCleanup(hub.store, terminating[0] as Task);
    await waitFor("the first Task gone", async () => (await tasksOf(hub.store, "stoppable")).length === 1);
    hub.poke("stoppable");
    await waitFor("a reconcile after the first cleanup", async () => hub.manager.queueDepth("job") === 0);
    t.equal((await getJob(hub.store, "stoppable"))?.status?.phase, "Stopping", "waits for every Task");
    await releaseCleanup(hub.store, terminating[1] as Task);
    j = await waitForJob(hub.store, "stoppable", "Stopped", phaseIs("Stopped"));
    t.equal((await tasksOf(hub.store, "stoppable")).length, 0);
    t.ok(j.status?.tasks?.every((x) => x.phase === "Stopped"));
    t.match(
      j.status?.conditions?.find((c) => c.type === "Ready"),
      { status: "False", reason: "Stopped" },
    );
    t.same(
      j.status?.events?.slice(-2).map((e) => e.reason),
      ["Stopping", "Stopped"],
    );

    await modify(hub, "stoppable", (spec) => {
      delete spec.stopped;
    });
    const fresh = await waitForTasks(hub, "stoppable", 2, 2);
    t.ok(fresh.every((x) => x.spec.run === 2 && x.metadata.uid !== terminating[0]?.metadata.uid));
    j = await waitForJob(hub.store, "stoppable", "run 2 Pending", (x) => x.status?.run === 2);
    t.equal(j.status?.phase, "Pending");
    t.match(j.status?.history, [{ run: 1, phase: "Stopped", reason: "started again after a stop" }]);
  },
);

t.test("a changed rlinf.io/run annotation restarts a Succeeded Job and keeps run 1's results", async (t) => {
  const hub = await startJobHarness(t);
  await pool(hub);
  await hub.store.create(job("again", [train()]));
  const [task] = await waitForTasks(hub, "again", 1);
  if (!task) throw new Error("no task");
  await report(hub.store, task, { phase: "Succeeded", exitCode: 0, completionTime: "2026-11-29T12:30:00Z" });
  await waitForJob(hub.store, "again", "Succeeded", phaseIs("Succeeded"));

  await modifyMeta(hub, "again", (meta) => {
    meta.annotations = { "rlinf.io/run": "2" };
  });
  await waitForJob(hub.store, "again", "Stopping for the restart", phaseIs("Stopping"));
  const old = await waitFor("the old Task terminating", async () => {
    const [x] = await tasksOf(hub.store, "again");
    return x?.metadata.deletionTimestamp ? x : undefined;
  });
  await releaseCleanup(hub.store, old);
  const [fresh] = await waitForTasks(hub, "again", 1, 2);
  t.not(fresh?.metadata.uid, task.metadata.uid, "a new Task, not the old one");
  const j = await waitForJob(
    hub.store,
    "again",
    "run 2",
    (x) => x.status?.run === 2 && x.status.phase === "Pending",
  );
  t.equal(j.status?.runAnnotation, "2");
  t.match(j.status?.history, [
    {
      run: 1,
      phase: "Succeeded",
      reason: 'the rlinf.io/run annotation changed to "2"',
      tasks: [{ name: "trainer", phase: "Succeeded", exitCode: 0 }],
    },
  ]);
  t.notOk(
    j.status?.conditions?.some((c) => c.type === "Complete"),
    "the new run starts without the old outcome",
  );
});

const withArgs = (template: ReturnType<typeof train>, args: string[]) => {
  const copy = structuredClone(template);
  const container = copy.kubernetes?.workload.template.spec.containers?.[0];
  if (!container) throw new Error("fixture");
  container.args = args;
  return copy;
};

t.test("changing a task's args on a Succeeded Job starts a new run, recorded as spec changed", async (t) => {
  const hub = await startJobHarness(t);
  await pool(hub);
  await hub.store.create(job("tuned", [withArgs(train(), ["--lr", "0.1"])]));
  const [task] = await waitForTasks(hub, "tuned", 1);
  if (!task) throw new Error("no task");
  await report(hub.store, task, succeeded);
  const done = await waitForJob(hub.store, "tuned", "Succeeded", phaseIs("Succeeded"));
  const firstHash = done.status?.specHash;
  t.ok(firstHash, "the run records the templates it started from");

  await modify(hub, "tuned", (spec) => {
    spec.tasks = [withArgs(train(), ["--lr", "0.01"])];
  });
  await waitForJob(hub.store, "tuned", "Stopping for the new run", phaseIs("Stopping"));
  const old = await waitFor("the old Task terminating", async () => {
    const [x] = await tasksOf(hub.store, "tuned");
    return x?.metadata.deletionTimestamp ? x : undefined;
  });
  await releaseCleanup(hub.store, old);
  const [fresh] = await waitForTasks(hub, "tuned", 1, 2);
  t.not(fresh?.metadata.uid, task.metadata.uid, "a new Task for the new run");
  t.same(fresh?.spec.kubernetes?.workload.template.spec.containers?.[0]?.args, ["--lr", "0.01"]);
  const j = await waitForJob(hub.store, "tuned", "run 2", (x) => x.status?.run === 2);
  t.equal(j.status?.phase, "Pending");
  t.not(j.status?.specHash, firstHash);
  t.match(j.status?.history, [{ run: 1, phase: "Succeeded", reason: "spec changed" }]);
  t.match(j.status?.events?.find((e) => e.reason === "RunStarted" && e.run === 2)?.message, "spec changed");
});

t.test("changing a running Job's template starts a new run instead of editing its Tasks", async (t) => {
  const hub = await startJobHarness(t);
  await pool(hub);
  await hub.store.create(job("live", [withArgs(train("Deployment"), ["--steps", "10"])]));
  const [task] = await waitForTasks(hub, "live", 1);
  if (!task) throw new Error("no task");
  await report(hub.store, task, running);
  await waitForJob(hub.store, "live", "Running", phaseIs("Running"));

  await modify(hub, "live", (spec) => {
    spec.tasks = [withArgs(train("Deployment"), ["--steps", "20"])];
  });
  const stopping = await waitForJob(hub.store, "live", "Stopping", phaseIs("Stopping"));
  t.match(
    stopping.status?.conditions?.find((c) => c.type === "Ready")?.message,
    /^spec changed: starting a fresh run; deleting the previous run's Tasks first/,
  );
  const old = await waitFor("the running Task deleted, not edited", async () => {
    const [x] = await tasksOf(hub.store, "live");
    return x?.metadata.deletionTimestamp ? x : undefined;
  });
  t.same(
    old.spec.kubernetes?.workload.template.spec.containers?.[0]?.args,
    ["--steps", "10"],
    "the old run's Task keeps the spec it ran with",
  );
  await releaseCleanup(hub.store, old);
  const [fresh] = await waitForTasks(hub, "live", 1, 2);
  t.same(fresh?.spec.kubernetes?.workload.template.spec.containers?.[0]?.args, ["--steps", "20"]);
  t.equal(fresh?.spec.run, 2);
  const j = await waitForJob(hub.store, "live", "run 2", (x) => x.status?.run === 2);
  t.match(j.status?.history, [{ run: 1, phase: "Stopped", reason: "spec changed" }]);
});

t.test("label and annotation changes (other than rlinf.io/run) do not start a run", async (t) => {
  const hub = await startJobHarness(t);
  await pool(hub);
  await hub.store.create(job("steady", [train("Deployment")]));
  const [task] = await waitForTasks(hub, "steady", 1);
  if (!task) throw new Error("no task");
  await report(hub.store, task, running);
  await waitForJob(hub.store, "steady", "Running", phaseIs("Running"));
  await modifyMeta(hub, "steady", (meta) => {
    meta.labels = { team: "rl" };
    meta.annotations = { note: "tuned on Tuesday" };
  });
  hub.poke("steady");
  await waitFor("the change reconciled", async () => hub.manager.queueDepth("job") === 0);
  const j = await getJob(hub.store, "steady");
  t.equal(j?.status?.run, 1);
  t.equal(j?.status?.phase, "Running");
  const [same] = await tasksOf(hub.store, "steady");
  t.equal(same?.metadata.uid, task.metadata.uid);
  t.notOk(same?.metadata.deletionTimestamp);
});

t.test("a Job deleted from git is stopped first, then goes", async (t) => {
  const hub = await startJobHarness(t);
  await pool(hub);
  await hub.store.create(job("doomed", [train("Deployment")]));
  const [task] = await waitForTasks(hub, "doomed", 1);
  if (!task) throw new Error("no task");
  await waitForJob(hub.store, "doomed", "the stop finalizer", (x) =>
    Boolean(x.metadata.finalizers?.includes("rlark.io/job-stop")),
  );
  await hub.store.delete("Job", "", "doomed");
  await waitForJob(hub.store, "doomed", "Stopping", phaseIs("Stopping"));
  const terminating = await waitFor("the Task terminating", async () => {
    const [x] = await tasksOf(hub.store, "doomed");
    return x?.metadata.deletionTimestamp ? x : undefined;
  });
  t.ok(await getJob(hub.store, "doomed"), "the Job stays while its Task is cleaned up");
  await releaseCleanup(hub.store, terminating);
  await waitFor("the Job gone", async () => (await getJob(hub.store, "doomed")) === undefined);
  t.equal((await tasksOf(hub.store, "doomed")).length, 0);
});

async function modify(
  hub: JobHarness,
  name: string,
  change: (spec: NonNullable<Awaited<ReturnType<typeof getJob>>>["spec"]) => void,
) {
  const j = await getJob(hub.store, name);
  if (!j) throw new Error(`no Job ${name}`);
  change(j.spec);
  await hub.store.update(j);
}

async function modifyMeta(
  hub: JobHarness,
  name: string,
  change: (meta: NonNullable<Awaited<ReturnType<typeof getJob>>>["metadata"]) => void,
) {
  const j = await getJob(hub.store, name);
  if (!j) throw new Error(`no Job ${name}`);
  change(j.metadata);
  await hub.store.update(j);
}
