import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import type { Job, Workflow, WorkflowJob } from "../../../operators/api/index.ts";
import { JOB_STOP_FINALIZER, WORKFLOW_RUN_LABEL } from "../../../operators/api/index.ts";
import { createJobController } from "../../../operators/controllers/job/index.ts";
import { createWorkflowController } from "../../../operators/controllers/workflow/index.ts";
import { Manager } from "../../../operators/lib/controller/index.ts";
import { modify, openSqliteStore } from "../../../operators/lib/store/index.ts";
import { waitFor } from "../../helpers/wait-for.ts";

function node(name: string, dependsOn: string[] = []): WorkflowJob {
  return {
    name,
    ...(dependsOn.length ? { dependsOn } : {}),
    template: { tasks: [{ name: "main", role: "Env", agentType: "Raw", raw: { command: ["true"] } }] },
  };
}

t.test("with the real Job controller: stop waits for each Job's own stop, resume starts run 2", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "rlark-workflow-job-"));
  const store = openSqliteStore({ dataDir: dir });
  const manager = new Manager({ store, resyncPeriod: 0 });
  manager.add(createWorkflowController());
  manager.add(createJobController());
  await manager.start();
  t.teardown(async () => {
    await manager.stop({ drain: false });
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  await store.create<Workflow>({
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Workflow",
    metadata: { name: "w" },
    spec: { jobs: [node("collect"), node("train", ["collect"])] },
  });
  // No cluster can take the task, so the Job stays Pending: the Job controller holds it anyway.
  const collect = await waitFor("collect held by the Job controller", async () => {
    const j = await store.get<Job>("Job", "", "w-collect");
    return j?.metadata.finalizers?.includes(JOB_STOP_FINALIZER) && j.status?.phase ? j : undefined;
  });
  t.equal(collect.status?.phase, "Pending");

  await modify<Workflow>(store, "Workflow", "", "w", (w) => {
    w.spec.stopped = true;
  });
  const stopped = await waitFor("Stopped", async () => {
    const w = await store.get<Workflow>("Workflow", "", "w");
    return w?.status?.phase === "Stopped" ? w : undefined;
  });
  t.equal(await store.get("Job", "", "w-collect"), undefined, "the Job went through its own stop");
  t.equal(stopped.status?.run, 1);

  await modify<Workflow>(store, "Workflow", "", "w", (w) => {
    w.spec.stopped = false;
  });
  const again = await waitFor("run 2", () => store.get<Job>("Job", "", "w-collect"));
  t.equal(again.metadata.labels?.[WORKFLOW_RUN_LABEL], "2");

  await store.delete("Workflow", "", "w");
  await waitFor("workflow gone", async () => (await store.get("Workflow", "", "w")) === undefined);
  t.equal(await store.get("Job", "", "w-collect"), undefined, "its Jobs went first");
});
