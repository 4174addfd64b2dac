import t from "tap";
import { Collector, job, task, tempStore } from "./helpers.ts";

t.test("a batch applies creates, updates, applies and deletes together, with one event burst", async (t) => {
  const { store } = tempStore(t);
  const keep = await store.create(job("keep", { n: 1 }));
  await store.create(job("gone"));
  const withStatus = await store.create(job("status", { n: 1 }));
  await store.updateStatus({ ...withStatus, status: { phase: "Running" } });
  const c = new Collector();
  await store.watch("Job", { resourceVersion: await store.resourceVersion() }, c.handler);
  const out = await store.applyBatch([
    { op: "create", object: job("new") },
    { op: "update", object: { ...keep, spec: { n: 2 } } },
    { op: "apply", object: job("status", { n: 5 }, { labels: { from: "git" } }) },
    { op: "apply", object: job("applied") },
    { op: "delete", kind: "Job", name: "gone" },
  ]);
  t.equal(out.length, 5);
  const applied = (await store.get("Job", "", "status"))!;
  t.same(applied.spec, { n: 5 });
  t.same(applied.status, { phase: "Running" }, "apply keeps status");
  t.equal(applied.metadata.uid, withStatus.metadata.uid, "apply keeps identity");
  t.equal(applied.metadata.generation, 2);
  await c.until(5);
  t.same(c.summary(), [
    "ADDED new@5",
    "MODIFIED keep@6",
    "MODIFIED status@7",
    "ADDED applied@8",
    "DELETED gone@9",
  ]);
});

t.test("a failing operation in the middle of a batch leaves nothing changed", async (t) => {
  const { store } = tempStore(t);
  const a = await store.create(job("a", { n: 1 }));
  await store.create(job("b"));
  const owner = await store.create(job("owner"));
  await store.create(task("dep", "ns", owner));
  const before = await store.resourceVersion();
  const snapshot = JSON.stringify((await store.list("Job")).items);
  const c = new Collector();
  await store.watch("Job", { resourceVersion: before }, c.handler);
  await t.rejects(
    store.applyBatch([
      { op: "create", object: job("c") },
      { op: "update", object: { ...a, spec: { n: 2 } } },
      { op: "delete", kind: "Job", name: "owner" },
      { op: "create", object: job("b") }, // AlreadyExists
      { op: "create", object: job("d") },
    ]),
    { code: "AlreadyExists", subject: { batchIndex: 3 }, message: /batch operation 3 \(create\)/ },
  );
  t.equal(await store.resourceVersion(), before, "no resourceVersion was taken");
  t.equal(JSON.stringify((await store.list("Job")).items), snapshot, "Jobs unchanged");
  t.ok(await store.get("Task", "ns", "dep"), "the cascade was rolled back too");
  await store.create(job("after"));
  await c.until(1);
  t.same(c.summary(), [`ADDED after@${Number(before) + 1}`], "no events from the failed batch");
});

t.test("a stale resourceVersion fails the whole batch with Conflict", async (t) => {
  const { store } = tempStore(t);
  const a = await store.create(job("a", { n: 1 }));
  await store.update({ ...a, spec: { n: 2 } });
  await t.rejects(
    store.applyBatch([
      { op: "create", object: job("x") },
      { op: "update", object: { ...a, spec: { n: 3 } } },
    ]),
    { code: "Conflict" },
  );
  t.equal(await store.get("Job", "", "x"), undefined);
});

t.test("a large batch commits in one transaction", async (t) => {
  const { store } = tempStore(t);
  const ops = Array.from({ length: 3000 }, (_, i) => ({
    op: "create" as const,
    object: task(`t${i}`, `agent-${i % 7}`, undefined, { "rlinf.io/job": `j${i % 100}` }),
  }));
  await store.applyBatch(ops);
  t.equal((await store.countByKind()).Task, 3000);
  t.equal((await store.list("Task", { labelSelector: "rlinf.io/job=j7" })).items.length, 30);
});

t.test(
  "apply keeps finalizers and ownerReferences that a controller set since the source read",
  async (t) => {
    const { store } = tempStore(t);
    const o = await store.create(job("a", { n: 1 }));
    await store.update({ ...o, metadata: { ...o.metadata, finalizers: ["rlark.io/stop"] } });
    const [out] = await store.applyBatch([
      { op: "apply", object: { ...job("a", { n: 2 }), metadata: { name: "a", finalizers: [] } } },
    ]);
    t.same(out?.metadata.finalizers, ["rlark.io/stop"]);
    t.same(out?.spec, { n: 2 });
  },
);
