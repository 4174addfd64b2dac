// The Store contract: behaviour every backend must show, with no assumption about how
// resourceVersions are spelled beyond "they grow". Run it against a backend with
// `storeContract(t, "name", factory)`; the SQLite backend runs it in contract-sqlite.test.ts, the
// Kubernetes (CRD) backend in contract-kubernetes.test.ts against a real apiserver. Dependents
// of a deleted owner are collected asynchronously there (kube-controller-manager's garbage
// collector), so those checks poll; and a batch there is checked whole, then applied in order
// (docs/adr/0008-kubernetes-store.md), so the contract asks all-or-nothing of batches that fail
// their checks, which is what callers rely on.

import type { Test } from "tap";
import {
  isExpired,
  type KubeObject,
  type Store,
  type Watch,
  type WatchEvent,
} from "../../../operators/lib/store/index.ts";
import { waitFor } from "../../helpers/wait-for.ts";

/** A fresh, empty store; its event log may be short (the expiry test writes 150 changes). */
export type StoreFactory = (t: Test) => Promise<Store>;

/** Bounded polling for what a backend does in the background (garbage collection). */
const background = { attempts: 400, everyMs: 100 };

/** How a watch from a compacted resourceVersion ends: rejected at once, or closed with the error. */
async function watchError(watch: Promise<Watch>): Promise<unknown> {
  try {
    const w = await watch;
    return await w.closed;
  } catch (error) {
    return error;
  }
}

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
    t.equal(await store.get("Job", "", "o"), undefined, "the owner goes at once");
    await waitFor(
      "the dependents to be collected",
      async () => (await store.list("Task")).items.map((o) => o.metadata.name).join() === "free",
      background,
    );
    t.pass("only the free Task is left");
  });

  t.test(`${backend}: Orphan keeps dependents and drops their owner reference`, async (t) => {
    const store = await open(t);
    const owner = await store.create(obj("Job", "o"));
    await store.create(owned("Task", "o-a", "agent-x", owner));
    await store.delete("Job", "", "o", { propagation: "Orphan" });
    await waitFor(
      "the owner to be gone and its dependent orphaned",
      async () => {
        if ((await store.get("Job", "", "o")) !== undefined) return false;
        // a dependent that is gone is not orphaned: wait for it to be there without its owner
        const dependent = await store.get("Task", "agent-x", "o-a");
        return dependent !== undefined && dependent.metadata.ownerReferences === undefined;
      },
      background,
    );
    t.ok(await store.get("Task", "agent-x", "o-a"), "the dependent stays");
  });

  t.test(`${backend}: delete preconditions and a missing object`, async (t) => {
    const store = await open(t);
    const a = await store.create(obj("Job", "a"));
    await store.update({ ...a, spec: { n: 1 } });
    await t.rejects(store.delete("Job", "", "a", { preconditions: { uid: "not-the-uid" } }), {
      code: "Conflict",
    });
    await t.rejects(
      store.delete("Job", "", "a", { preconditions: { resourceVersion: a.metadata.resourceVersion! } }),
      {
        code: "Conflict",
      },
    );
    t.ok(await store.get("Job", "", "a"), "a failed precondition deletes nothing");
    await store.delete("Job", "", "a", { preconditions: { uid: a.metadata.uid! } });
    await t.rejects(async () => store.delete("Job", "", "a"), { code: "NotFound" });
  });

  t.test(`${backend}: an update that changes nothing writes nothing`, async (t) => {
    const store = await open(t);
    const a = await store.create(obj("Job", "a"));
    const same = await store.update(a);
    t.equal(same.metadata.resourceVersion, a.metadata.resourceVersion);
    const s = await store.updateStatus({ ...a, status: { phase: "P" } });
    t.equal((await store.updateStatus(s)).metadata.resourceVersion, s.metadata.resourceVersion);
    await t.rejects(store.updateStatus({ ...a, status: { phase: "Q" } }), { code: "Conflict" });
  });

  t.test(
    `${backend}: an object created with a status keeps it; create needs no resourceVersion`,
    async (t) => {
      const store = await open(t);
      const a = await store.create(obj("Job", "a", undefined, { status: { phase: "Given" } }));
      t.same(a.status, { phase: "Given" });
      t.same((await store.get("Job", "", "a"))?.status, { phase: "Given" });
      await t.rejects(
        store.create(obj("Job", "b", undefined, { metadata: { name: "b", resourceVersion: "5" } })),
        { code: "Invalid" },
      );
    },
  );

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

  t.test(`${backend}: a list window starts after a position and stops at a limit`, async (t) => {
    const store = await open(t);
    for (const [name, ns] of [
      ["a", "n1"],
      ["b", "n1"],
      ["c", "n1"],
      ["a", "n2"],
      ["b", "n2"],
    ] as const) {
      await store.create({ ...obj("Task", name, ns), metadata: { name, namespace: ns, labels: { ns } } });
    }
    const keys = async (o: Parameters<Store["list"]>[1]) =>
      (await store.list("Task", o)).items.map((x) => `${x.metadata.namespace}/${x.metadata.name}`);
    t.same(await keys({ limit: 2 }), ["n1/a", "n1/b"]);
    t.same(await keys({ after: { namespace: "n1", name: "b" }, limit: 2 }), ["n1/c", "n2/a"]);
    // A position that names no object (deleted since the last page) still marks a place.
    t.same(await keys({ after: { namespace: "n1", name: "bb" } }), ["n1/c", "n2/a", "n2/b"]);
    t.same(await keys({ after: { namespace: "n2", name: "b" } }), []);
    t.same(await keys({ namespace: "n2", after: { namespace: "n1", name: "z" }, limit: 1 }), ["n2/a"]);
    t.same(await keys({ labelSelector: "ns=n1", after: { namespace: "n1", name: "a" }, limit: 1 }), ["n1/b"]);
    t.same(await keys({ limit: 0 }), []);
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

  t.test(`${backend}: a watch without resourceVersion starts with the current objects`, async (t) => {
    const store = await open(t);
    await store.create(obj("Job", "a"));
    await store.create(obj("Job", "b"));
    const c = collector();
    const w = await store.watch("Job", {}, c.handler);
    t.teardown(() => w.stop());
    await c.until(2);
    await store.create(obj("Job", "c"));
    await c.until(3);
    t.same(c.seen(), ["ADDED a", "ADDED b", "ADDED c"]);
  });

  t.test(`${backend}: a label-selector watch sees objects enter and leave the selection`, async (t) => {
    const store = await open(t);
    const { resourceVersion } = await store.list("Task");
    const c = collector();
    const w = await store.watch("Task", { resourceVersion, labelSelector: "role=gpu" }, c.handler);
    t.teardown(() => w.stop());
    const x = await store.create(obj("Task", "x", "n1"));
    const inSel = await store.update({ ...x, metadata: { ...x.metadata, labels: { role: "gpu" } } });
    const still = await store.update({ ...inSel, spec: { n: 5 } });
    await store.update({ ...still, metadata: { ...still.metadata, labels: { role: "cpu" } } });
    await c.until(3);
    t.same(c.seen(), ["ADDED x", "MODIFIED x", "DELETED x"]);
  });

  t.test(
    `${backend}: a watch from a compacted resourceVersion is Expired; relist and watch again`,
    async (t) => {
      const store = await open(t);
      let a = await store.create(obj("Job", "a"));
      for (let n = 1; n <= 150; n++) a = await store.update({ ...a, spec: { n } });
      const error = await watchError(store.watch("Job", { resourceVersion: "1" }, () => undefined));
      t.ok(isExpired(error), `Expired, got ${String(error)}`);
      const list = await store.list("Job");
      t.same(list.items[0]?.spec, { n: 150 });
      const c = collector();
      const w = await store.watch("Job", { resourceVersion: list.resourceVersion }, c.handler);
      t.teardown(() => w.stop());
      await store.update({ ...a, spec: { n: 151 } });
      await c.until(1);
      t.same(c.events[0]?.object.spec, { n: 151 });
    },
  );

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
