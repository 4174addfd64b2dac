import t from "tap";
import type { KubeObject, WatchEvent } from "../../../operators/lib/store/index.ts";
import { Collector, job, settle, task, tempStore } from "./helpers.ts";

t.test("a watch delivers ADDED, MODIFIED and DELETED in resourceVersion order", async (t) => {
  const { store } = tempStore(t);
  const c = new Collector();
  const w = await store.watch("Job", {}, c.handler);
  const a = await store.create(job("a", { n: 1 }));
  await store.create(job("b"));
  await store.update({ ...a, spec: { n: 2 } });
  await store.delete("Job", "", "b");
  await store.create(task("t", "ns")); // another kind: not seen
  await c.until(4);
  t.same(c.summary(), ["ADDED a@1", "ADDED b@2", "MODIFIED a@3", "DELETED b@4"]);
  t.same(c.events[2]?.object.spec, { n: 2 });
  w.stop();
  t.equal(await w.closed, undefined);
});

t.test("a watch without resourceVersion starts with the current objects as ADDED", async (t) => {
  const { store } = tempStore(t);
  await store.create(job("a"));
  await store.create(job("b"));
  const c = new Collector();
  await store.watch("Job", {}, c.handler);
  await store.create(job("c"));
  await c.until(3);
  t.same(c.summary(), ["ADDED a@1", "ADDED b@2", "ADDED c@3"]);
});

t.test(
  "a watch resumed from a resourceVersion replays exactly the later changes, then live ones",
  async (t) => {
    const { store } = tempStore(t);
    const a = await store.create(job("a"));
    const { resourceVersion } = await store.list("Job");
    await store.update({ ...a, spec: { changed: true } });
    await store.create(job("b"));
    await store.delete("Job", "", "a");
    const c = new Collector();
    await store.watch("Job", { resourceVersion }, c.handler);
    await store.create(job("c"));
    await c.until(4);
    t.same(c.summary(), ["MODIFIED a@2", "ADDED b@3", "DELETED a@4", "ADDED c@5"]);
  },
);

t.test("a watch resumed after a restart replays from the persisted event log", async (t) => {
  const first = tempStore(t);
  const a = await first.store.create(job("a"));
  await first.store.update({ ...a, spec: { x: 1 } });
  await first.store.close();
  const second = tempStore(t, { dataDir: first.dir });
  const c = new Collector();
  await second.store.watch("Job", { resourceVersion: "1" }, c.handler);
  await c.until(1);
  t.same(c.summary(), ["MODIFIED a@2"]);
});

t.test(
  "a resourceVersion older than the compacted log is Expired (410), and a relist recovers",
  async (t) => {
    const { store } = tempStore(t, { eventRetention: 5 });
    for (let i = 0; i < 200; i++) await store.create(job(`j${i}`));
    await t.rejects(
      store.watch("Job", { resourceVersion: "1" }, () => {}),
      {
        code: "Expired",
        status: 410,
        message: /too old.*list again/,
      },
    );
    await t.rejects(
      store.watch("Job", { resourceVersion: "100000" }, () => {}),
      { code: "Expired" },
    );
    const { resourceVersion, items } = await store.list("Job");
    t.equal(items.length, 200);
    const c = new Collector();
    await store.watch("Job", { resourceVersion }, c.handler);
    await store.create(job("late"));
    await c.until(1);
    t.same(c.summary(), ["ADDED late@201"]);
  },
);

t.test("a label-selector watch sees objects enter and leave the selection", async (t) => {
  const { store } = tempStore(t);
  const c = new Collector();
  await store.watch("Task", { labelSelector: "role=head" }, c.handler);
  let o = await store.create(task("t", "ns", undefined, { role: "worker" }));
  o = await store.update({ ...o, metadata: { ...o.metadata, labels: { role: "head" } } });
  o = await store.update({ ...o, spec: { image: "y" } });
  o = await store.update({ ...o, metadata: { ...o.metadata, labels: { role: "worker" } } });
  await store.create(task("h", "ns", undefined, { role: "head" }));
  await store.delete("Task", "ns", "h");
  await c.until(5);
  t.same(c.summary(), [
    "ADDED ns/t@2",
    "MODIFIED ns/t@3",
    "DELETED ns/t@4",
    "ADDED ns/h@5",
    "DELETED ns/h@6",
  ]);
});

t.test("the same selector semantics hold when replaying from the log", async (t) => {
  const { store } = tempStore(t);
  let o = await store.create(task("t", "ns", undefined, { role: "worker" }));
  o = await store.update({ ...o, metadata: { ...o.metadata, labels: { role: "head" } } });
  await store.update({ ...o, metadata: { ...o.metadata, labels: { role: "worker" } } });
  const c = new Collector();
  await store.watch("Task", { labelSelector: "role=head", resourceVersion: "1" }, c.handler);
  await c.until(2);
  t.same(c.summary(), ["ADDED ns/t@2", "DELETED ns/t@3"]);
});

t.test("a namespace watch sees only its namespace", async (t) => {
  const { store } = tempStore(t);
  const c = new Collector();
  await store.watch("Task", { namespace: "agent-a" }, c.handler);
  await store.create(task("x", "agent-b"));
  await store.create(task("y", "agent-a"));
  await c.until(1);
  await settle();
  t.same(c.summary(), ["ADDED agent-a/y@2"]);
});

t.test("an async handler gets one event at a time, in order", async (t) => {
  const { store } = tempStore(t);
  const seen: string[] = [];
  let active = 0;
  let maxActive = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const done = new Promise<void>((resolve) => {
    void store.watch("Job", {}, async (e: WatchEvent<KubeObject>) => {
      active++;
      maxActive = Math.max(maxActive, active);
      if (seen.length === 0) await gate;
      seen.push(e.object.metadata.name);
      active--;
      if (seen.length === 3) resolve();
    });
  });
  await store.applyBatch([
    { op: "create", object: job("a") },
    { op: "create", object: job("b") },
  ]);
  await store.create(job("c"));
  release();
  await done;
  t.same(seen, ["a", "b", "c"]);
  t.equal(maxActive, 1);
});

t.test("a handler may write to the store; a throwing handler ends its watch with the error", async (t) => {
  const { store } = tempStore(t);
  const w = await store.watch("Job", {}, async (e) => {
    if (e.type === "ADDED" && !e.object.metadata.labels) {
      await store.update({ ...e.object, metadata: { ...e.object.metadata, labels: { seen: "yes" } } });
    }
    if (e.object.metadata.name === "boom") throw new Error("handler failed");
  });
  await store.create(job("a"));
  await store.create(job("boom"));
  const error = await w.closed;
  t.match(error?.message, /handler failed/);
  t.equal((await store.get("Job", "", "a"))?.metadata.labels?.seen, "yes");
});

t.test("closing the store ends its watches", async (t) => {
  const { store } = tempStore(t);
  const w = await store.watch("Job", {}, () => {});
  await store.close();
  t.equal(await w.closed, undefined);
  await t.rejects(store.create(job("x")), /closed/);
});
