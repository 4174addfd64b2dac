import t from "tap";
import { type KubeObject, modify } from "../../../operators/lib/store/index.ts";
import { job, tempStore } from "./helpers.ts";

t.test("modify retries on Conflict and keeps the concurrent writer's change", async (t) => {
  const { store } = tempStore(t);
  await store.create(job("a", { n: 0 }, { labels: { keep: "me" } }));
  let calls = 0;
  const out = await modify(store, "Job", "", "a", (o: KubeObject) => {
    calls++;
    if (calls === 1) {
      // Another writer gets in between our read and our write.
      void store.update({ ...o, metadata: { ...o.metadata, labels: { keep: "me", other: "writer" } } });
    }
    o.spec = { n: 1 };
  });
  t.equal(calls, 2, "read again after the Conflict");
  t.same(out?.spec, { n: 1 });
  t.same(out?.metadata.labels, { keep: "me", other: "writer" });
});

t.test("modify with status writes status only; a missing object gives undefined", async (t) => {
  const { store } = tempStore(t);
  await store.create(job("a", { n: 0 }));
  const out = await modify(
    store,
    "Job",
    "",
    "a",
    (o) => {
      o.status = { phase: "Running" };
      o.spec = { n: 9 };
    },
    { status: true },
  );
  t.same(out?.status, { phase: "Running" });
  t.same(out?.spec, { n: 0 });
  t.equal(
    await modify(store, "Job", "", "missing", () => {
      t.fail("not called");
    }),
    undefined,
  );
});

t.test("modify gives up with the Conflict after its attempts", async (t) => {
  const { store } = tempStore(t);
  await store.create(job("a", { n: 0 }));
  await t.rejects(
    modify(
      store,
      "Job",
      "",
      "a",
      (o) => {
        void store.update({ ...o, spec: { n: Math.random() } });
        o.spec = { mine: true };
      },
      { attempts: 3 },
    ),
    { code: "Conflict" },
  );
});
