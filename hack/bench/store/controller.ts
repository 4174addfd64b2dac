// The hub's shape of work on the store and controller runtime: one git revision of N Jobs
// (one batch), a Job controller that creates 3 Tasks per Job (one batch each) and writes the
// Job's status, with a watch on Tasks that queues their owner Jobs.
// `node hack/bench/store/controller.ts [jobs=10000] [workers=2,8,32]`. Prints time and RSS.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Controller, Manager, watchOwned } from "../../../operators/lib/controller/index.ts";
import { type KubeObject, modify, openSqliteStore } from "../../../operators/lib/store/index.ts";

const jobs = Number(process.argv[2] ?? 10_000);
const workerCounts = (process.argv[3] ?? "2,8,32").split(",").map(Number);
const roles = ["head", "worker", "policy"];

for (const workers of workerCounts) {
  const dir = mkdtempSync(join(tmpdir(), "rlark-bench-controller-"));
  const store = openSqliteStore({ dataDir: dir });
  await store.applyBatch(
    Array.from({ length: jobs }, (_, i) => ({
      op: "create" as const,
      object: {
        apiVersion: "rlinf.io/v1alpha1",
        kind: "Job",
        metadata: { name: `job-${i}` },
        spec: { tasks: roles },
      },
    })),
  );
  let done = 0;
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const controller: Controller = {
    name: "job",
    kind: "Job",
    watches: [watchOwned("Task", "Job")],
    async reconcile({ name }, { store }) {
      const job = await store.get("Job", "", name);
      if (!job) return;
      const { items } = await store.list("Task", { labelSelector: `rlinf.io/job=${name}` });
      if (items.length < roles.length) {
        const have = new Set(items.map((t) => t.metadata.name));
        await store.applyBatch(
          roles
            .filter((role) => !have.has(`${name}-${role}`))
            .map((role) => ({
              op: "create" as const,
              object: {
                apiVersion: "rlinf.io/v1alpha1",
                kind: "Task",
                metadata: {
                  name: `${name}-${role}`,
                  namespace: `agent-c${roles.indexOf(role)}`,
                  labels: { "rlinf.io/job": name },
                  ownerReferences: [
                    {
                      apiVersion: job.apiVersion,
                      kind: "Job",
                      name,
                      uid: job.metadata.uid!,
                      controller: true,
                    },
                  ],
                },
                spec: { role },
              } satisfies KubeObject,
            })),
        );
        return;
      }
      if ((job.status as { phase?: string } | undefined)?.phase !== "Pending") {
        await modify(
          store,
          "Job",
          "",
          name,
          (j) => {
            j.status = { phase: "Pending", tasks: roles.length };
          },
          { status: true },
        );
        if (++done === jobs) finish();
      }
    },
  };
  const manager = new Manager({ store, workers, resyncPeriod: 0 });
  manager.add(controller);
  const t0 = performance.now();
  await manager.start();
  await finished;
  const seconds = (performance.now() - t0) / 1000;
  const counts = await store.countByKind();
  console.log(
    `${workers} workers: ${jobs} Jobs -> ${counts.Task} Tasks + ${jobs} status writes in ${seconds.toFixed(1)} s, rss ${Math.round(process.memoryUsage().rss / 1e6)} MB`,
  );
  await manager.stop({ drain: false });
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
