import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import type { Job, JobPhase, Workflow, WorkflowJob } from "../../../operators/api/index.ts";
import { WORKFLOW_JOB_LABEL, WORKFLOW_LABEL, WORKFLOW_RUN_LABEL } from "../../../operators/api/index.ts";
import { createWorkflowController } from "../../../operators/controllers/workflow/index.ts";
import { Manager } from "../../../operators/lib/controller/index.ts";
import { modify, openSqliteStore, type Store } from "../../../operators/lib/store/index.ts";
import { waitFor } from "../../helpers/wait-for.ts";

async function start(t: Test): Promise<Store> {
  const dir = mkdtempSync(join(tmpdir(), "rlark-workflow-"));
  const store = openSqliteStore({ dataDir: dir });
  const manager = new Manager({ store, resyncPeriod: 0 });
  manager.add(createWorkflowController());
  await manager.start();
  t.teardown(async () => {
    await manager.stop({ drain: false });
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return store;
}

function node(name: string, dependsOn: string[] = [], image = "busybox"): WorkflowJob {
  return {
    name,
    ...(dependsOn.length ? { dependsOn } : {}),
    template: {
      tasks: [
        {
          name: "main",
          role: "Env",
          agentType: "Raw",
          raw: { command: [image] },
        } as WorkflowJob["template"]["tasks"][number],
      ],
    },
  };
}

function workflow(name: string, jobs: WorkflowJob[], spec: Partial<Workflow["spec"]> = {}): Workflow {
  return { apiVersion: "rlinf.io/v1alpha1", kind: "Workflow", metadata: { name }, spec: { jobs, ...spec } };
}

/** What the Job controller would do: report a phase. */
async function setPhase(store: Store, name: string, phase: JobPhase): Promise<void> {
  const done = await modify<Job>(
    store,
    "Job",
    "",
    name,
    (j) => {
      j.status = { ...(j.status ?? {}), phase };
    },
    { status: true },
  );
  if (!done) throw new Error(`no Job ${name}`);
}

const job = (store: Store, name: string) => store.get<Job>("Job", "", name);
const wf = (store: Store, name: string) => store.get<Workflow>("Workflow", "", name);

async function nodePhase(store: Store, wfName: string, nodeName: string): Promise<string | undefined> {
  return (await wf(store, wfName))?.status?.nodes?.find((n) => n.name === nodeName)?.phase;
}

async function jobNames(store: Store, wfName: string): Promise<string[]> {
  const { items } = await store.list("Job", { labelSelector: `${WORKFLOW_LABEL}=${wfName}` });
  return items.map((j) => j.metadata.name);
}

const pipeline = () => [node("collect"), node("train", ["collect"]), node("deploy", ["train"])];

t.test("collect → train → deploy: train starts only after collect Succeeded", async (t) => {
  const store = await start(t);
  const created = await store.create(workflow("ppo", pipeline()));
  const collect = await waitFor("the root Job", () => job(store, "ppo-collect"));
  t.same(collect.metadata.labels, {
    [WORKFLOW_LABEL]: "ppo",
    [WORKFLOW_JOB_LABEL]: "collect",
    [WORKFLOW_RUN_LABEL]: "1",
  });
  t.match(collect.metadata.ownerReferences, [
    { kind: "Workflow", name: "ppo", uid: created.metadata.uid, controller: true },
  ]);
  t.same(collect.spec, pipeline()[0]?.template, "the Job's spec is the node's template");
  t.same(await jobNames(store, "ppo"), ["ppo-collect"]);

  await setPhase(store, "ppo-collect", "Running");
  await waitFor("collect seen Running", async () => (await nodePhase(store, "ppo", "collect")) === "Running");
  t.equal(await job(store, "ppo-train"), undefined, "train waits while collect runs");
  t.equal((await wf(store, "ppo"))?.status?.phase, "Running");
  t.match(
    (await wf(store, "ppo"))?.status?.nodes?.find((n) => n.name === "train"),
    {
      phase: "Pending",
      message: "waiting for collect",
    },
  );

  await setPhase(store, "ppo-collect", "Succeeded");
  await waitFor("train created", () => job(store, "ppo-train"));
  t.equal(await job(store, "ppo-deploy"), undefined);
  await setPhase(store, "ppo-train", "Succeeded");
  await waitFor("deploy created", () => job(store, "ppo-deploy"));
  await setPhase(store, "ppo-deploy", "Succeeded");
  const done = await waitFor("workflow Succeeded", async () => {
    const w = await wf(store, "ppo");
    return w?.status?.phase === "Succeeded" ? w : undefined;
  });
  t.equal(done.status?.run, 1);
  t.match(done.status?.conditions, [{ type: "Succeeded", status: "True", reason: "AllJobsSucceeded" }]);
  t.same(
    done.status?.nodes?.map((n) => [n.name, n.phase, n.job]),
    [
      ["collect", "Succeeded", "ppo-collect"],
      ["train", "Succeeded", "ppo-train"],
      ["deploy", "Succeeded", "ppo-deploy"],
    ],
  );
  t.ok(
    done.status?.nodes?.every((n) => n.completionTime),
    "every node has a completion time",
  );
});

t.test("a diamond joins only when both branches succeeded", async (t) => {
  const store = await start(t);
  await store.create(workflow("dia", [node("a"), node("b", ["a"]), node("c", ["a"]), node("d", ["b", "c"])]));
  await waitFor("a", () => job(store, "dia-a"));
  await setPhase(store, "dia-a", "Succeeded");
  await waitFor("both branches", async () => (await jobNames(store, "dia")).length === 3);
  await setPhase(store, "dia-b", "Succeeded");
  await waitFor("b seen", async () => (await nodePhase(store, "dia", "b")) === "Succeeded");
  t.equal(await job(store, "dia-d"), undefined, "d waits for c");
  await setPhase(store, "dia-c", "Succeeded");
  await waitFor("d created", () => job(store, "dia-d"));
  t.pass("d started after b and c");
});

t.test("StopAll: a failure stops running Jobs and never creates the rest", async (t) => {
  const store = await start(t);
  await store.create(workflow("s", [node("a"), node("b"), node("c", ["b"])]));
  await waitFor("roots", async () => (await jobNames(store, "s")).length === 2);
  await setPhase(store, "s-b", "Running");
  await setPhase(store, "s-a", "Failed");
  const b = await waitFor("b stopped", async () => {
    const j = await job(store, "s-b");
    return j?.spec.stopped ? j : undefined;
  });
  t.equal(b.spec.stopped, true);
  t.equal((await job(store, "s-a"))?.spec.stopped, undefined, "the failed Job is left as it is");
  await setPhase(store, "s-b", "Succeeded");
  const w = await waitFor("workflow Failed", async () => {
    const x = await wf(store, "s");
    return x?.status?.phase === "Failed" ? x : undefined;
  });
  t.equal(await job(store, "s-c"), undefined, "c is never created though b succeeded");
  t.match(
    w.status?.nodes?.find((n) => n.name === "c"),
    { phase: "Skipped" },
  );
  t.match(w.status?.conditions, [{ type: "Succeeded", status: "False", reason: "JobFailed" }]);
});

t.test("ContinueIndependent: what does not depend on the failure runs on", async (t) => {
  const store = await start(t);
  await store.create(
    workflow("ci", [node("a"), node("b", ["a"]), node("x"), node("y", ["x"])], {
      failurePolicy: "ContinueIndependent",
    }),
  );
  await waitFor("roots", async () => (await jobNames(store, "ci")).length === 2);
  await setPhase(store, "ci-x", "Running");
  await setPhase(store, "ci-a", "Failed");
  await waitFor("b skipped", async () => (await nodePhase(store, "ci", "b")) === "Skipped");
  t.equal((await job(store, "ci-x"))?.spec.stopped, undefined, "x is not stopped");
  await setPhase(store, "ci-x", "Succeeded");
  await waitFor("y created", () => job(store, "ci-y"));
  await setPhase(store, "ci-y", "Succeeded");
  await waitFor("workflow Failed", async () => (await wf(store, "ci"))?.status?.phase === "Failed");
  t.equal(await job(store, "ci-b"), undefined, "b never ran");
});

t.test("stop deletes every Job (completed too); resume starts run 2 from the roots", async (t) => {
  const store = await start(t);
  await store.create(workflow("r", pipeline()));
  await waitFor("collect", () => job(store, "r-collect"));
  await setPhase(store, "r-collect", "Succeeded");
  await waitFor("train", () => job(store, "r-train"));
  await setPhase(store, "r-train", "Running");
  // The Job controller holds a Job while its Tasks are cleaned up.
  await modify<Job>(store, "Job", "", "r-train", (j) => {
    j.metadata.finalizers = ["test.rlark.io/cleanup"];
  });

  await modify<Workflow>(store, "Workflow", "", "r", (w) => {
    w.spec.stopped = true;
  });
  await waitFor("collect deleted", async () => (await job(store, "r-collect")) === undefined);
  const stopping = await waitFor("Stopping", async () => {
    const w = await wf(store, "r");
    return w?.status?.phase === "Stopping" ? w : undefined;
  });
  t.match(
    stopping.status?.nodes?.find((n) => n.name === "train"),
    { phase: "Stopping", job: "r-train" },
  );
  t.ok((await job(store, "r-train"))?.metadata.deletionTimestamp, "train is being deleted");

  // Resume while train of run 1 still holds its name: nothing of run 2 may start yet.
  await modify<Workflow>(store, "Workflow", "", "r", (w) => {
    w.spec.stopped = false;
  });
  await waitFor("run 2", async () => (await wf(store, "r"))?.status?.run === 2);
  t.equal(await job(store, "r-collect"), undefined, "run 2 waits for run 1's Jobs to go");

  await modify<Job>(store, "Job", "", "r-train", (j) => {
    j.metadata.finalizers = [];
  });
  const collect = await waitFor("run 2 collect", () => job(store, "r-collect"));
  t.equal(collect.metadata.labels?.[WORKFLOW_RUN_LABEL], "2");
  t.same(await jobNames(store, "r"), ["r-collect"], "the earlier run's completion is not reused");
  const w = await wf(store, "r");
  t.equal(w?.status?.run, 2);
  t.match(
    w?.status?.nodes?.find((n) => n.name === "train"),
    { phase: "Pending" },
  );
});

t.test("a stopped Workflow with no Jobs left is Stopped", async (t) => {
  const store = await start(t);
  await store.create(workflow("st", pipeline()));
  await waitFor("collect", () => job(store, "st-collect"));
  await modify<Workflow>(store, "Workflow", "", "st", (w) => {
    w.spec.stopped = true;
  });
  const w = await waitFor("Stopped", async () => {
    const x = await wf(store, "st");
    return x?.status?.phase === "Stopped" ? x : undefined;
  });
  t.same(await jobNames(store, "st"), []);
  t.match(w.status?.conditions, [{ type: "Succeeded", status: "False", reason: "Stopped" }]);
});

t.test("a template edited in git reaches only Jobs not yet created", async (t) => {
  const store = await start(t);
  await store.create(workflow("e", pipeline()));
  await waitFor("collect", () => job(store, "e-collect"));
  await modify<Workflow>(store, "Workflow", "", "e", (w) => {
    w.spec.jobs = [
      node("collect", [], "changed"),
      node("train", ["collect"], "changed"),
      node("deploy", ["train"]),
    ];
  });
  await waitFor("edit seen", async () => (await wf(store, "e"))?.status?.observedGeneration === 2);
  t.same((await job(store, "e-collect"))?.spec, node("collect").template, "the running Job keeps its spec");
  await setPhase(store, "e-collect", "Succeeded");
  const train = await waitFor("train", () => job(store, "e-train"));
  t.same(train.spec, node("train", [], "changed").template, "the new template applies to train");
});

t.test("a Workflow removed from git deletes its Jobs first, then goes", async (t) => {
  const store = await start(t);
  await store.create(workflow("d", [node("a"), node("b")]));
  await waitFor("finalizer", async () => (await wf(store, "d"))?.metadata.finalizers?.length === 1);
  await waitFor("jobs", async () => (await jobNames(store, "d")).length === 2);
  await modify<Job>(store, "Job", "", "d-a", (j) => {
    j.metadata.finalizers = ["test.rlark.io/cleanup"];
  });
  await store.delete("Workflow", "", "d");
  await waitFor("b deleted", async () => (await job(store, "d-b")) === undefined);
  t.ok(await wf(store, "d"), "the Workflow waits for its Jobs");
  await modify<Job>(store, "Job", "", "d-a", (j) => {
    j.metadata.finalizers = [];
  });
  await waitFor("workflow gone", async () => (await wf(store, "d")) === undefined);
  t.same(await jobNames(store, "d"), []);
});

t.test("a Job name held by a Job the Workflow does not own is reported, not taken over", async (t) => {
  const store = await start(t);
  await store.create<Job>({
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Job",
    metadata: { name: "clash-a" },
    spec: { tasks: [] },
  });
  await store.create(workflow("clash", [node("a")]));
  const w = await waitFor("reported", async () => {
    const x = await wf(store, "clash");
    return x?.status?.nodes?.[0]?.message ? x : undefined;
  });
  t.match(w.status?.nodes?.[0], {
    name: "a",
    phase: "Pending",
    message: /Job clash-a: a Job of that name exists .* does not own/,
  });
  t.same((await job(store, "clash-a"))?.spec, { tasks: [] }, "the other Job is left alone");
});
