import t from "tap";
import { type KubeObject, openSqliteStore } from "../../../operators/lib/store/index.ts";
import { job, task, tempStore } from "./helpers.ts";

t.test("create assigns uid, resourceVersion, generation 1 and creationTimestamp", async (t) => {
  const { store } = tempStore(t);
  const a = await store.create(job("a"));
  const b = await store.create(job("b"));
  t.match(a.metadata.uid, /^[0-9a-f-]{36}$/);
  t.not(a.metadata.uid, b.metadata.uid);
  t.equal(a.metadata.generation, 1);
  t.equal(a.metadata.creationTimestamp, "2026-11-29T12:00:00Z");
  t.ok(Number(b.metadata.resourceVersion) > Number(a.metadata.resourceVersion), "resourceVersion grows");
  t.same(await store.get("Job", "", "a"), a);
  t.equal(await store.get("Job", "", "missing"), undefined);
});

t.test("creating an existing object is AlreadyExists; a set resourceVersion is Invalid", async (t) => {
  const { store } = tempStore(t);
  await store.create(job("a"));
  await t.rejects(store.create(job("a")), {
    code: "AlreadyExists",
    status: 409,
    message: /Job a already exists/,
  });
  await t.rejects(store.create(job("b", {}, { resourceVersion: "5" })), { code: "Invalid", status: 422 });
  await t.rejects(store.create({ apiVersion: "v1", kind: "Job", metadata: { name: "" } }), {
    code: "Invalid",
  });
  await t.rejects(store.create(job("c", {}, { labels: { "bad key": "x" } })), { code: "Invalid" });
});

t.test("generateName makes a unique name", async (t) => {
  const { store } = tempStore(t);
  const o = await store.create({
    apiVersion: "v1",
    kind: "Job",
    metadata: { name: "", generateName: "run-" },
  });
  t.match(o.metadata.name, /^run-[a-z0-9]{5}$/);
});

t.test("an update with a stale resourceVersion is a Conflict and changes nothing", async (t) => {
  const { store } = tempStore(t);
  const created = await store.create(job("a", { replicas: 1 }));
  const first = await store.update({ ...created, spec: { replicas: 2 } });
  await t.rejects(store.update({ ...created, spec: { replicas: 3 } }), {
    code: "Conflict",
    status: 409,
    message: /resourceVersion .* is stale/,
  });
  t.same((await store.get("Job", "", "a"))?.spec, { replicas: 2 });
  t.equal((await store.get("Job", "", "a"))?.metadata.resourceVersion, first.metadata.resourceVersion);
});

t.test("an update without resourceVersion is unconditional; a missing object is NotFound", async (t) => {
  const { store } = tempStore(t);
  await store.create(job("a", { replicas: 1 }));
  const o = job("a", { replicas: 5 });
  t.same((await store.update(o)).spec, { replicas: 5 });
  await t.rejects(store.update(job("nope")), { code: "NotFound", status: 404 });
  await t.rejects(store.updateStatus(job("nope")), { code: "NotFound" });
  await t.rejects(store.delete("Job", "", "nope"), { code: "NotFound" });
});

t.test("generation moves only when spec changes", async (t) => {
  const { store } = tempStore(t);
  let o = await store.create(job("a", { replicas: 1, nested: { x: [1, 2] } }));
  o = await store.update({ ...o, metadata: { ...o.metadata, labels: { team: "x" } } });
  t.equal(o.metadata.generation, 1, "label change keeps generation");
  o = await store.updateStatus({ ...o, status: { phase: "Running" } });
  t.equal(o.metadata.generation, 1, "status change keeps generation");
  o = await store.update({ ...o, spec: { nested: { x: [1, 2] }, replicas: 1 } });
  t.equal(o.metadata.generation, 1, "same spec in another key order keeps generation");
  o = await store.update({ ...o, spec: { replicas: 2, nested: { x: [1, 2] } } });
  t.equal(o.metadata.generation, 2, "spec change bumps generation");
});

t.test("update ignores status and server fields; updateStatus changes only status", async (t) => {
  const { store } = tempStore(t);
  const o = await store.create(job("a", { replicas: 1 }));
  const withStatus = await store.updateStatus({ ...o, status: { phase: "Running" } });
  const u = await store.update({
    ...withStatus,
    metadata: {
      ...withStatus.metadata,
      uid: withStatus.metadata.uid,
      generation: 99,
      creationTimestamp: "x",
    },
    spec: { replicas: 1 },
    status: { phase: "Hacked" },
  });
  t.same(u.status, { phase: "Running" });
  t.equal(u.metadata.generation, 1);
  t.equal(u.metadata.creationTimestamp, o.metadata.creationTimestamp);
  const s = await store.updateStatus({ ...u, spec: { replicas: 9 }, status: { phase: "Succeeded" } });
  t.same(s.spec, { replicas: 1 }, "updateStatus leaves spec");
  t.same(s.status, { phase: "Succeeded" });
  await t.rejects(store.updateStatus({ ...u, status: { phase: "Stale" } }), { code: "Conflict" });
});

t.test("an update that changes nothing writes nothing", async (t) => {
  const { store } = tempStore(t);
  const o = await store.create(job("a", { replicas: 1 }));
  const again = await store.update(structuredClone(o));
  t.equal(again.metadata.resourceVersion, o.metadata.resourceVersion);
  t.equal(await store.resourceVersion(), o.metadata.resourceVersion);
});

t.test("an update with another uid is a Conflict (the object was recreated)", async (t) => {
  const { store } = tempStore(t);
  const o = await store.create(job("a"));
  await store.delete("Job", "", "a");
  await store.create(job("a"));
  await t.rejects(store.update({ ...o, metadata: { ...o.metadata, resourceVersion: undefined } }), {
    code: "Conflict",
    message: /deleted and recreated/,
  });
});

t.test(
  "delete with finalizers sets deletionTimestamp and keeps the object until the last finalizer goes",
  async (t) => {
    const { store, clock } = tempStore(t);
    await store.create(job("a", {}, { finalizers: ["rlark.io/stop", "rlark.io/other"] }));
    clock.advance(5000);
    const marked = await store.delete("Job", "", "a");
    t.equal(marked.metadata.deletionTimestamp, "2026-11-29T12:00:05Z");
    const again = await store.delete("Job", "", "a");
    t.equal(
      again.metadata.resourceVersion,
      marked.metadata.resourceVersion,
      "a second delete changes nothing",
    );
    let o = (await store.get("Job", "", "a"))!;
    t.ok(o, "still there");
    await t.rejects(
      store.update({ ...o, metadata: { ...o.metadata, finalizers: ["rlark.io/stop", "rlark.io/new"] } }),
      {
        code: "Invalid",
        message: /no new finalizers/,
      },
    );
    o = await store.update({ ...o, metadata: { ...o.metadata, finalizers: ["rlark.io/other"] } });
    t.equal(
      o.metadata.deletionTimestamp,
      marked.metadata.deletionTimestamp,
      "update cannot clear deletionTimestamp",
    );
    t.ok(await store.get("Job", "", "a"), "still there with one finalizer");
    await store.update({ ...o, metadata: { ...o.metadata, finalizers: [] } });
    t.equal(await store.get("Job", "", "a"), undefined, "gone with the last finalizer");
  },
);

t.test("deleting an owner deletes its dependents, across namespaces", async (t) => {
  const { store } = tempStore(t);
  const owner = await store.create(job("train"));
  const other = await store.create(job("other"));
  const t1 = await store.create(task("train-a", "agent-bj", owner));
  await store.create(task("train-b", "agent-sh", owner));
  const grandchild = await store.create({ ...task("pod-1", "agent-bj", t1), kind: "Pod" });
  await store.create(task("other-a", "agent-bj", other));
  await store.delete("Job", "", "train");
  t.same(
    (await store.list("Task")).items.map((o) => o.metadata.name),
    ["other-a"],
  );
  t.equal(await store.get("Pod", "agent-bj", grandchild.metadata.name), undefined, "cascades down the tree");
});

t.test("a dependent with another live owner only loses the reference", async (t) => {
  const { store } = tempStore(t);
  const a = await store.create(job("a"));
  const b = await store.create(job("b"));
  const shared = task("shared", "ns", a);
  shared.metadata.ownerReferences!.push({ apiVersion: "v1", kind: "Job", name: "b", uid: b.metadata.uid! });
  await store.create(shared);
  await store.delete("Job", "", "a");
  const left = await store.get("Task", "ns", "shared");
  t.same(
    left?.metadata.ownerReferences?.map((r) => r.name),
    ["b"],
  );
  await store.delete("Job", "", "b");
  t.equal(await store.get("Task", "ns", "shared"), undefined);
});

t.test("a dependent with finalizers is marked, not removed, when its owner goes", async (t) => {
  const { store } = tempStore(t);
  const owner = await store.create(job("a"));
  await store.create({
    ...task("t", "ns", owner),
    metadata: { ...task("t", "ns", owner).metadata, finalizers: ["f"] },
  });
  await store.delete("Job", "", "a");
  const left = await store.get("Task", "ns", "t");
  t.ok(left?.metadata.deletionTimestamp);
});

t.test("Orphan propagation keeps dependents and drops their reference", async (t) => {
  const { store } = tempStore(t);
  const owner = await store.create(job("a"));
  await store.create(task("t", "ns", owner));
  await store.delete("Job", "", "a", { propagation: "Orphan" });
  const left = await store.get("Task", "ns", "t");
  t.ok(left);
  t.equal(left?.metadata.ownerReferences, undefined);
});

t.test("Foreground propagation keeps the owner until its dependents are gone", async (t) => {
  const { store } = tempStore(t);
  const owner = await store.create(job("a"));
  const blocked = task("blocked", "ns", owner);
  blocked.metadata.finalizers = ["agent"];
  await store.create(blocked);
  await store.create(task("free", "ns", owner));
  const marked = await store.delete("Job", "", "a", { propagation: "Foreground" });
  t.ok(marked.metadata.deletionTimestamp);
  t.same(marked.metadata.finalizers, ["foregroundDeletion"]);
  t.equal(await store.get("Task", "ns", "free"), undefined);
  const b = (await store.get("Task", "ns", "blocked"))!;
  t.ok(b.metadata.deletionTimestamp);
  await store.update({ ...b, metadata: { ...b.metadata, finalizers: [] } });
  t.equal(await store.get("Job", "", "a"), undefined, "owner goes with its last dependent");
});

t.test("delete preconditions on uid and resourceVersion", async (t) => {
  const { store } = tempStore(t);
  const o = await store.create(job("a"));
  await t.rejects(store.delete("Job", "", "a", { preconditions: { uid: "other" } }), { code: "Conflict" });
  await t.rejects(store.delete("Job", "", "a", { preconditions: { resourceVersion: "999" } }), {
    code: "Conflict",
  });
  await store.delete("Job", "", "a", {
    preconditions: { uid: o.metadata.uid!, resourceVersion: o.metadata.resourceVersion! },
  });
  t.equal(await store.get("Job", "", "a"), undefined);
});

t.test(
  "list filters by namespace and label selector, sorted, with the store's resourceVersion",
  async (t) => {
    const { store } = tempStore(t);
    await store.create(task("t3", "agent-b", undefined, { "rlinf.io/job": "j1", role: "head" }));
    await store.create(task("t1", "agent-a", undefined, { "rlinf.io/job": "j1", role: "worker" }));
    await store.create(task("t2", "agent-a", undefined, { "rlinf.io/job": "j2" }));
    const last = await store.create(job("j1"));
    const names = (l: { items: KubeObject[] }) =>
      l.items.map((o) => `${o.metadata.namespace}/${o.metadata.name}`);
    const all = await store.list("Task");
    t.same(names(all), ["agent-a/t1", "agent-a/t2", "agent-b/t3"]);
    t.equal(all.resourceVersion, last.metadata.resourceVersion);
    t.same(names(await store.list("Task", { namespace: "agent-a" })), ["agent-a/t1", "agent-a/t2"]);
    t.same(names(await store.list("Task", { labelSelector: "rlinf.io/job=j1" })), [
      "agent-a/t1",
      "agent-b/t3",
    ]);
    t.same(names(await store.list("Task", { labelSelector: "rlinf.io/job in (j1,j2),role!=head" })), [
      "agent-a/t1",
      "agent-a/t2",
    ]);
    t.same(names(await store.list("Task", { labelSelector: { matchLabels: { role: "head" } } })), [
      "agent-b/t3",
    ]);
    t.same(names(await store.list("Task", { namespace: "agent-a", labelSelector: "!role" })), ["agent-a/t2"]);
    t.same(await store.countByKind(), { Job: 1, Task: 3 });
    await t.rejects(store.list("Task", { labelSelector: "a in (" }), { code: "Invalid" });
  },
);

t.test("label changes move an object in and out of indexed selections", async (t) => {
  const { store } = tempStore(t);
  let o = await store.create(task("t", "ns", undefined, { a: "1" }));
  o = await store.update({ ...o, metadata: { ...o.metadata, labels: { a: "2" } } });
  t.same((await store.list("Task", { labelSelector: "a=1" })).items, []);
  t.equal((await store.list("Task", { labelSelector: "a=2" })).items.length, 1);
});

t.test("objects and the resourceVersion counter survive closing and reopening", async (t) => {
  const { store, dir } = tempStore(t);
  const o = await store.create(job("a"));
  await store.delete("Job", "", "a");
  const rv = await store.resourceVersion();
  await store.close();
  const reopened = openSqliteStore({ dataDir: dir });
  t.teardown(() => reopened.close());
  t.equal(await reopened.resourceVersion(), rv);
  const again = await reopened.create(job("a"));
  t.ok(Number(again.metadata.resourceVersion) > Number(rv));
  t.not(again.metadata.uid, o.metadata.uid);
});

t.test("concurrent writes in one turn commit together yet fail independently", async (t) => {
  const { store } = tempStore(t);
  const results = await Promise.allSettled([
    store.create(job("a")),
    store.create(job("a")),
    store.create(job("b")),
  ]);
  t.same(
    results.map((r) => r.status),
    ["fulfilled", "rejected", "fulfilled"],
  );
  t.same(
    (await store.list("Job")).items.map((o) => o.metadata.name),
    ["a", "b"],
  );
  const rvs = results.flatMap((r) =>
    r.status === "fulfilled" ? [Number(r.value.metadata.resourceVersion)] : [],
  );
  t.same(rvs, [1, 2], "the failed write took no resourceVersion");
});

t.test("a second Foreground delete of an object waiting for dependents writes nothing", async (t) => {
  const { store } = tempStore(t);
  const owner = await store.create(job("a"));
  const blocked = task("blocked", "ns", owner);
  blocked.metadata.finalizers = ["agent"];
  await store.create(blocked);
  const first = await store.delete("Job", "", "a", { propagation: "Foreground" });
  const second = await store.delete("Job", "", "a", { propagation: "Foreground" });
  t.equal(second.metadata.resourceVersion, first.metadata.resourceVersion);
});

t.test("the database and its WAL are readable by the owner only", async (t) => {
  const { store, dir } = tempStore(t);
  await store.create(job("a"));
  const { statSync } = await import("node:fs");
  for (const file of ["store.db", "store.db-wal"]) {
    t.equal(statSync(`${dir}/${file}`).mode & 0o777, 0o600, file);
  }
});

t.test("a write stores the object as it was when the write was called", async (t) => {
  const { store } = tempStore(t);
  const o = job("a", { n: 1 });
  const pending = store.create(o);
  o.spec = { n: 2 };
  t.same((await pending).spec, { n: 1 });
  const batch = store.applyBatch([{ op: "create", object: o }]);
  o.metadata.name = "renamed";
  await t.rejects(batch, { code: "AlreadyExists" });
});
