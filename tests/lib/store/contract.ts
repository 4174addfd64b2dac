// The Store contract: behaviour every backend must show, with no assumption about how
// resourceVersions are spelled beyond "they grow". Run it against a backend with
// `storeContract(t, "name", factory)`; the SQLite backend runs it in contract-sqlite.test.ts, a
// Kubernetes (CRD) backend runs the same file against a real apiserver.

import type { Test } from "tap";
import type { KubeObject, Store, WatchEvent } from "../../../operators/lib/store/index.ts";

export type StoreFactory = (t: Test) => Promise<Store>;

const obj = (
  kind: string,
  name: string,
  namespace?: string,
  extra: Partial<KubeObject> = {},
): KubeObject => ({
  apiVersion: "rlinf.io/v1alpha1",
  kind,
  metadata: { name, ...(namespace ? { namespace } : {}) },
  spec: { n: 0 },
  ...extra,
});

function owned(kind: string, name: string, namespace: string, owner: KubeObject): KubeObject {
  const o = obj(kind, name, namespace);
  o.metadata.ownerReferences = [
    {
      apiVersion: owner.apiVersion,
      kind: owner.kind,
      name: owner.metadata.name,
      uid: owner.metadata.uid!,
      controller: true,
    },
  ];
  return o;
}

function collector() {
  const events: WatchEvent[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  return {
    events,
    handler(e: WatchEvent) {
      events.push(e);
      for (const w of waiters.splice(0)) {
        if (events.length >= w.n) w.resolve();
        else waiters.push(w);
      }
    },
    until(n: number): Promise<void> {
      if (events.length >= n) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ n, resolve }));
    },
    seen: () => events.map((e) => `${e.type} ${e.object.metadata.name}`),
  };
}

const rvOf = (o: KubeObject) => BigInt(o.metadata.resourceVersion!);

export function storeContract(t: Test, backend: string, open: StoreFactory): void {
  t.test(`${backend}: create, get, conflict, generation, status`, async (t) => {
    const store = await open(t);
    const a = await store.create(obj("Job", "a"));
    t.ok(a.metadata.uid && a.metadata.resourceVersion && a.metadata.creationTimestamp);
    t.equal(a.metadata.generation, 1);
    await t.rejects(store.create(obj("Job", "a")), { code: "AlreadyExists" });
    const b = await store.update({ ...a, metadata: { ...a.metadata, labels: { x: "y" } } });
    t.equal(b.metadata.generation, 1);
    t.ok(rvOf(b) > rvOf(a));
    const c = await store.update({ ...b, spec: { n: 1 } });
    t.equal(c.metadata.generation, 2);
    await t.rejects(store.update({ ...b, spec: { n: 2 } }), { code: "Conflict" });
    const s = await store.updateStatus({ ...c, spec: { n: 99 }, status: { phase: "Running" } });
    t.same(s.spec, { n: 1 });
    t.same(s.status, { phase: "Running" });
    const u = await store.update({ ...s, status: { phase: "Ignored" } });
    t.same(u.status, { phase: "Running" });
    t.same(await store.get("Job", "", "a"), u);
    t.equal(await store.get("Job", "", "none"), undefined);
    await t.rejects(store.update(obj("Job", "none")), { code: "NotFound" });
  });

  t.test(`${backend}: finalizers hold a deleted object until removed`, async (t) => {
    const store = await open(t);
    await store.create(obj("Job", "f", undefined, { metadata: { name: "f", finalizers: ["x"] } }));
    const marked = await store.delete("Job", "", "f");
    t.ok(marked.metadata.deletionTimestamp);
    const held = (await store.get("Job", "", "f"))!;
    t.ok(held);
    await store.update({ ...held, metadata: { ...held.metadata, finalizers: [] } });
    t.equal(await store.get("Job", "", "f"), undefined);
  });

  t.test(`${backend}: deleting an owner collects its dependents`, async (t) => {
    const store = await open(t);
    const owner = await store.create(obj("Job", "o"));
    await store.create(owned("Task", "o-a", "agent-x", owner));
    await store.create(owned("Task", "o-b", "agent-y", owner));
    await store.create(obj("Task", "free", "agent-x"));
    await store.delete("Job", "", "o");
    t.same(
      (await store.list("Task")).items.map((o) => o.metadata.name),
      ["free"],
    );
  });

  t.test(`${backend}: list by namespace and label selector`, async (t) => {
    const store = await open(t);
    for (const [name, ns, job] of [
      ["t1", "n1", "j1"],
      ["t2", "n1", "j2"],
      ["t3", "n2", "j1"],
    ] as const) {
      await store.create({ ...obj("Task", name, ns), metadata: { name, namespace: ns, labels: { job } } });
    }
    const names = async (o: Parameters<Store["list"]>[1]) =>
      (await store.list("Task", o)).items.map((x) => x.metadata.name);
    t.same(await names({ labelSelector: "job=j1" }), ["t1", "t3"]);
    t.same(await names({ namespace: "n1" }), ["t1", "t2"]);
    t.same(await names({ namespace: "n1", labelSelector: { matchLabels: { job: "j2" } } }), ["t2"]);
    await t.rejects(store.list("Task", { labelSelector: "job in (" }), { code: "Invalid" });
  });

  t.test(`${backend}: watch from a list's resourceVersion sees every later change in order`, async (t) => {
    const store = await open(t);
    const a = await store.create(obj("Job", "a"));
    const { resourceVersion } = await store.list("Job");
    const c = collector();
    const w = await store.watch("Job", { resourceVersion }, c.handler);
    t.teardown(() => w.stop());
    await store.update({ ...a, spec: { n: 1 } });
    await store.create(obj("Job", "b"));
    await store.delete("Job", "", "a");
    await c.until(3);
    t.same(c.seen(), ["MODIFIED a", "ADDED b", "DELETED a"]);
    const rvs = c.events.map((e) => rvOf(e.object));
    t.ok(
      rvs.every((rv, i) => i === 0 || rv > rvs[i - 1]!),
      "resourceVersions grow",
    );
  });

  t.test(`${backend}: a watch resumed from a past resourceVersion replays what followed`, async (t) => {
    const store = await open(t);
    const a = await store.create(obj("Job", "a"));
    await store.update({ ...a, spec: { n: 1 } });
    await store.create(obj("Job", "b"));
    const c = collector();
    const w = await store.watch("Job", { resourceVersion: a.metadata.resourceVersion! }, c.handler);
    t.teardown(() => w.stop());
    await c.until(2);
    t.same(c.seen(), ["MODIFIED a", "ADDED b"]);
  });

  t.test(`${backend}: a batch is all or nothing`, async (t) => {
    const store = await open(t);
    await store.create(obj("Job", "exists"));
    await t.rejects(
      store.applyBatch([
        { op: "create", object: obj("Job", "new") },
        { op: "delete", kind: "Job", name: "exists" },
        { op: "create", object: obj("Job", "new") },
      ]),
      { code: "AlreadyExists" },
    );
    t.same(
      (await store.list("Job")).items.map((o) => o.metadata.name),
      ["exists"],
    );
    const out = await store.applyBatch([
      { op: "apply", object: obj("Job", "exists", undefined, { spec: { n: 7 } }) },
      { op: "create", object: obj("Job", "new") },
    ]);
    t.same(out[0]?.spec, { n: 7 });
    t.same(
      (await store.list("Job")).items.map((o) => o.metadata.name),
      ["exists", "new"],
    );
  });
}
