// The kubernetes store's informer cache on a real apiserver (the shared fleet): reads are served
// from memory once the cache is listed (no request per get or list), a store reads its own
// writes at once, and another writer's changes (another store, the garbage collector) arrive by
// the watch.
import t from "tap";
import type { KubeObject } from "../../../operators/lib/store/index.ts";
import { kubeStoreFixture } from "../../helpers/kube-store.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const fixture = await kubeStoreFixture(t, { schemas: "free" });

const task = (name: string, namespace: string, job: string): KubeObject => ({
  apiVersion: "rlinf.io/v1alpha1",
  kind: "Task",
  metadata: { name, namespace, labels: { job } },
  spec: { n: 0 },
});

t.test("gets and lists are served from the cache: no request per read", async (t) => {
  await fixture.wipe();
  const store = fixture.open(t);
  for (let i = 0; i < 20; i++) await store.create(task(`t${i}`, `ns${i % 2}`, `j${i % 4}`));
  await store.get("Task", "ns0", "t0");
  const before = store.requestsSent.GET ?? 0;
  for (let i = 0; i < 20; i++) {
    t.equal((await store.get("Task", `ns${i % 2}`, `t${i}`))?.metadata.name, `t${i}`);
  }
  t.equal(await store.get("Task", "ns0", "missing"), undefined);
  t.same(
    (await store.list("Task", { labelSelector: "job=j1" })).items.map((o) => o.metadata.name),
    ["t1", "t13", "t17", "t5", "t9"],
    "a label selection, through the label index, sorted by namespace and name",
  );
  t.equal((await store.list("Task", { namespace: "ns0" })).items.length, 10);
  t.equal(store.requestsSent.GET ?? 0, before, "no GET sent for 22 reads once the cache is listed");
  t.equal((await store.countByKind()).Task, 20, "counted from the caches (each kind's listed once)");
});

t.test("a store reads its own writes at once; another store's arrive by the watch", async (t) => {
  await fixture.wipe();
  const writer = fixture.open(t);
  const reader = fixture.open(t);
  t.same((await reader.list("Task")).items, [], "the reader's cache is listed, empty");
  let a = await writer.create(task("a", "ns0", "j"));
  for (let n = 1; n <= 10; n++) {
    a = await writer.update({ ...a, spec: { n } });
    t.same((await writer.get("Task", "ns0", "a"))?.spec, { n }, `the writer reads its update ${n}`);
  }
  const s = await writer.updateStatus({ ...a, status: { phase: "Running" } });
  t.same((await writer.get("Task", "ns0", "a"))?.status, { phase: "Running" }, "and its status");
  await waitFor(
    "the reader to see the writer's last change",
    async () =>
      (await reader.get("Task", "ns0", "a"))?.metadata.resourceVersion === s.metadata.resourceVersion,
    onKube,
  );
  await writer.delete("Task", "ns0", "a");
  t.equal(await writer.get("Task", "ns0", "a"), undefined, "the writer reads its delete");
  await waitFor(
    "the reader to see the delete",
    async () => (await reader.get("Task", "ns0", "a")) === undefined,
    onKube,
  );
  const handedOut = (await reader.list("Task")).items;
  t.same(handedOut, [], "gone from the reader's list too");
});

t.test("objects handed out are copies: mutating one changes nothing cached", async (t) => {
  await fixture.wipe();
  const store = fixture.open(t);
  await store.create(task("c", "ns0", "j"));
  const got = (await store.get("Task", "ns0", "c"))!;
  got.spec = { n: 99 };
  (got.metadata.labels as Record<string, string>).job = "other";
  t.same((await store.get("Task", "ns0", "c"))?.spec, { n: 0 });
  t.equal((await store.list("Task", { labelSelector: "job=j" })).items.length, 1);
});
