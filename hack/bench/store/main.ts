// Store benchmark at the hub's scale: `node hack/bench/store/main.ts [jobs=10000]`.
// Prints writes/s for single writes (group-committed with 8 writers in flight), one big batch,
// a 30k list, label-selected lists, and a cascade delete. Numbers only; nothing is asserted.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type KubeObject, openSqliteStore } from "../../../operators/lib/store/index.ts";

const jobs = Number(process.argv[2] ?? 10_000);
const dir = mkdtempSync(join(tmpdir(), "rlark-bench-store-"));
const store = openSqliteStore({ dataDir: dir });

function timed<T>(label: string, count: number, fn: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  return fn().then((result) => {
    const ms = performance.now() - t0;
    const rate = count > 0 ? `  ${Math.round((count / ms) * 1000).toLocaleString("en")} /s` : "";
    console.log(`${label.padEnd(48)} ${ms.toFixed(0).padStart(7)} ms${rate}`);
    return result;
  });
}

const jobObject = (i: number): KubeObject => ({
  apiVersion: "rlinf.io/v1alpha1",
  kind: "Job",
  metadata: {
    name: `job-${i}`,
    labels: { "rlinf.io/team": `t${i % 20}` },
    annotations: { "rlark.io/source": `jobs/${i}.yaml:1` },
  },
  spec: {
    domain: "d",
    tasks: ["head", "worker", "policy"].map((n) => ({ name: n, replicas: 1, resources: { cpu: "4" } })),
  },
});

try {
  const created = await timed(`batch create ${jobs} Jobs (one transaction)`, jobs, () =>
    store.applyBatch(
      Array.from({ length: jobs }, (_, i) => ({ op: "create" as const, object: jobObject(i) })),
    ),
  );
  const taskCount = jobs * 3;
  let next = 0;
  await timed(`create ${taskCount} Tasks one by one, 8 writers`, taskCount, async () => {
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let i = next++; i < taskCount; i = next++) {
          const owner = created[Math.floor(i / 3)]!;
          await store.create({
            apiVersion: "rlinf.io/v1alpha1",
            kind: "Task",
            metadata: {
              name: `${owner.metadata.name}-${i % 3}`,
              namespace: `agent-c${i % 50}`,
              labels: { "rlinf.io/job": owner.metadata.name },
              ownerReferences: [
                {
                  apiVersion: owner.apiVersion,
                  kind: "Job",
                  name: owner.metadata.name,
                  uid: owner.metadata.uid!,
                  controller: true,
                },
              ],
            },
            spec: { template: "x", replicas: 1 },
          });
        }
      }),
    );
  });
  await timed("create 1000 Tasks one by one, 1 writer", 1000, async () => {
    for (let i = 0; i < 1000; i++) {
      await store.create({ apiVersion: "v1", kind: "Probe", metadata: { name: `p${i}` } });
    }
  });
  const { items } = await timed(`list ${taskCount} Tasks`, taskCount, () => store.list("Task"));
  if (items.length !== taskCount) throw new Error(`listed ${items.length}`);
  await timed("1000 lists by label rlinf.io/job=<job>", 1000, async () => {
    for (let i = 0; i < 1000; i++) await store.list("Task", { labelSelector: `rlinf.io/job=job-${i}` });
  });
  await timed("1000 status updates, 8 writers", 1000, async () => {
    let n = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let i = n++; i < 1000; i = n++) {
          const o = items[i]!;
          await store.updateStatus({ ...o, status: { phase: "Running" } });
        }
      }),
    );
  });
  await timed(`delete ${Math.min(jobs, 1000)} Jobs with cascade (batch)`, Math.min(jobs, 1000) * 4, () =>
    store.applyBatch(
      Array.from({ length: Math.min(jobs, 1000) }, (_, i) => ({
        op: "delete" as const,
        kind: "Job",
        name: `job-${i}`,
      })),
    ),
  );
  console.log("objects", await store.countByKind(), "rss MB", Math.round(process.memoryUsage().rss / 1e6));
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
