import t from "tap";
import {
  type Controller,
  Manager,
  type ReconcileRequest,
  watchOwned,
} from "../../../operators/lib/controller/index.ts";
import type { Logger } from "../../../operators/lib/logger.ts";
import { Registry } from "../../../operators/lib/metrics/index.ts";
import { waitFor } from "../../helpers/wait-for.ts";
import { parseExposition } from "../metrics/parse-exposition.ts";
import { job, task, tempStore } from "../store/helpers.ts";

/** The conditions here hang on the store and the event loop only: check often. */
const often = { attempts: 2000, everyMs: 0 };

function recording(name = "job", kind = "Job") {
  const calls: string[] = [];
  const controller: Controller & { calls: string[] } = {
    name,
    kind,
    calls,
    reconcile(req: ReconcileRequest) {
      calls.push(req.key);
    },
  };
  return controller;
}

const errors: string[] = [];
const logger: Logger = { info() {}, warn() {}, error: (m, f) => errors.push(`${m} ${JSON.stringify(f)}`) };

t.test("existing objects are reconciled at start, and every change after", async (t) => {
  const { store, clock } = tempStore(t);
  await store.create(job("a"));
  await store.create(task("t", "ns"));
  const c = recording();
  const m = new Manager({ store, clock, resyncPeriod: 0 });
  m.add(c);
  await m.start();
  t.teardown(() => m.stop());
  await waitFor("initial reconcile", () => c.calls.length === 1, often);
  t.same(c.calls, ["a"]);
  await store.create(job("b"));
  await store.delete("Job", "", "a");
  await waitFor("reconciles of changes", () => c.calls.length === 3, often);
  t.same(c.calls, ["a", "b", "a"]);
});

t.test(
  "one key is never reconciled twice at once, and a change during a reconcile runs it again",
  async (t) => {
    const { store, clock } = tempStore(t);
    const a = await store.create(job("a", { n: 0 }));
    let active = 0;
    let maxActive = 0;
    let runs = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const m = new Manager({ store, clock, workers: 4, resyncPeriod: 0 });
    m.add({
      name: "job",
      kind: "Job",
      async reconcile() {
        active++;
        maxActive = Math.max(maxActive, active);
        runs++;
        if (runs === 1) await gate;
        active--;
      },
    });
    await m.start();
    t.teardown(() => m.stop());
    await waitFor("first reconcile running", () => runs === 1, often);
    let o = a;
    for (let n = 1; n <= 5; n++) o = await store.update({ ...o, spec: { n } });
    await waitFor("changes noted", () => m.queue("job").processing === 1 && m.queueDepth("job") === 0, often);
    t.equal(runs, 1, "no second reconcile while the first runs");
    release();
    await waitFor("the key ran once more", () => runs === 2 && active === 0, often);
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    t.equal(runs, 2, "five changes during a reconcile give one more reconcile");
    t.equal(maxActive, 1);
  },
);

t.test("a failing reconcile is retried after 5, 10, 20 ms and the backoff resets on success", async (t) => {
  const { store, clock } = tempStore(t);
  await store.create(job("a"));
  let attempts = 0;
  let failUntil = 3;
  const registry = new Registry();
  const m = new Manager({ store, clock, registry, logger, resyncPeriod: 0 });
  m.add({
    name: "job",
    kind: "Job",
    reconcile() {
      attempts++;
      if (attempts <= failUntil) throw new Error(`boom ${attempts}`);
    },
  });
  await m.start();
  t.teardown(() => m.stop());
  const delays: number[] = [];
  for (let i = 1; i <= 3; i++) {
    await waitFor(
      `attempt ${i} failed and was scheduled`,
      () => attempts === i && clock.pending === 1,
      often,
    );
    const [delay] = clock.pendingDelays();
    delays.push(delay!);
    clock.advance(delay! - 1);
    t.equal(attempts, i, "not retried before its delay");
    clock.advance(1);
  }
  await waitFor("fourth attempt succeeded", () => attempts === 4 && m.queue("job").processing === 0, often);
  t.same(delays, [5, 10, 20]);
  t.equal(m.queue("job").retries("a"), 0, "success resets the backoff");
  t.equal(clock.pending, 0);
  t.match(errors.join("\n"), /reconcile failed, will retry .*"key":"a".*"error":"boom 1"/);
  failUntil = 5;
  await store.update({ ...(await store.get("Job", "", "a"))!, spec: { again: true } });
  await waitFor("fails again", () => attempts === 5 && clock.pending === 1, often);
  t.same(clock.pendingDelays(), [5], "backoff starts over at 5 ms");
  const metrics = parseExposition(await m.metricsText());
  t.equal(metrics.value("rlark_reconcile_errors_total", { controller: "job" }), 4);
  t.equal(metrics.value("rlark_reconcile_total", { controller: "job", result: "success" }), 1);
});

t.test("requeueAfter reconciles the key again after the delay", async (t) => {
  const { store, clock } = tempStore(t);
  await store.create(job("a"));
  let runs = 0;
  const m = new Manager({ store, clock, resyncPeriod: 0 });
  m.add({
    name: "job",
    kind: "Job",
    reconcile() {
      runs++;
      return runs === 1 ? { requeueAfter: 30_000 } : undefined;
    },
  });
  await m.start();
  t.teardown(() => m.stop());
  await waitFor("first run scheduled a requeue", () => runs === 1 && clock.pending === 1, often);
  t.same(clock.pendingDelays(), [30_000]);
  clock.advance(29_999);
  t.equal(runs, 1);
  clock.advance(1);
  await waitFor("requeued run", () => runs === 2, often);
  t.pass();
});

t.test("resync queues every object of the primary kind each period", async (t) => {
  const { store, clock } = tempStore(t);
  await store.create(job("a"));
  await store.create(job("b"));
  const c = recording();
  const m = new Manager({ store, clock, resyncPeriod: 60_000 });
  m.add(c);
  await m.start();
  t.teardown(() => m.stop());
  await waitFor("initial", () => c.calls.length === 2, often);
  clock.advance(60_000);
  await waitFor("first resync", () => c.calls.length === 4, often);
  clock.advance(60_000);
  await waitFor("second resync", () => c.calls.length === 6, often);
  t.same(c.calls, ["a", "b", "a", "b", "a", "b"]);
});

t.test("a change to an owned object queues its owner", async (t) => {
  const { store, clock } = tempStore(t);
  const owner = await store.create(job("train"));
  const calls: string[] = [];
  const m = new Manager({ store, clock, resyncPeriod: 0 });
  m.add({
    name: "job",
    kind: "Job",
    watches: [watchOwned("Task", "Job")],
    reconcile: (req) => {
      calls.push(req.key);
    },
  });
  await m.start();
  t.teardown(() => m.stop());
  await waitFor("initial", () => calls.length === 1, often);
  const tk = await store.create(task("train-head", "agent-bj", owner));
  await waitFor("task creation queues the job", () => calls.length === 2, often);
  await store.updateStatus({ ...tk, status: { phase: "Running" } });
  await waitFor("task status queues the job", () => calls.length === 3, often);
  await store.create(task("loner", "agent-bj"));
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  t.same(calls, ["train", "train", "train"], "an unowned task queues nothing");
});

t.test("metrics text is valid exposition with queue depth, reconciles, latency and store size", async (t) => {
  const { store, clock } = tempStore(t);
  await store.create(job("a"));
  await store.create(job("b"));
  await store.create(task("t", "ns"));
  const registry = new Registry();
  const age = registry.gauge({
    name: "rlark_source_revision_age_seconds",
    help: "Age of the applied revision.",
  });
  age.set(12);
  const m = new Manager({ store, clock, registry, resyncPeriod: 0 });
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  m.add({
    name: "job",
    kind: "Job",
    workers: 1,
    async reconcile() {
      await gate;
      clock.advance(300);
    },
  });
  m.add(recording("task", "Task"));
  await m.start();
  t.teardown(() => m.stop());
  await waitFor(
    "one running, one queued",
    () => m.queue("job").processing === 1 && m.queueDepth("job") === 1,
    often,
  );
  let metrics = parseExposition(await m.metricsText());
  t.equal(metrics.value("rlark_workqueue_depth", { controller: "job" }), 1);
  t.equal(metrics.value("rlark_store_objects", { kind: "Job" }), 2);
  t.equal(metrics.value("rlark_store_objects", { kind: "Task" }), 1);
  t.equal(metrics.value("rlark_source_revision_age_seconds", {}), 12);
  t.equal(metrics.value("rlark_reconcile_errors_total", { controller: "job" }), 0, "zero series exist");
  release();
  await waitFor("drained", () => m.queue("job").processing === 0 && m.queueDepth("job") === 0, often);
  metrics = parseExposition(await m.metricsText());
  t.equal(metrics.types.rlark_reconcile_duration_seconds, "histogram");
  t.equal(metrics.value("rlark_reconcile_total", { controller: "job", result: "success" }), 2);
  t.equal(metrics.value("rlark_reconcile_duration_seconds_count", { controller: "job" }), 2);
  t.equal(metrics.value("rlark_reconcile_duration_seconds_bucket", { controller: "job", le: "0.25" }), 0);
  t.equal(metrics.value("rlark_reconcile_duration_seconds_bucket", { controller: "job", le: "0.5" }), 2);
  t.equal(metrics.value("rlark_reconcile_duration_seconds_sum", { controller: "job" }), 0.6);
  t.equal(metrics.value("rlark_workqueue_depth", { controller: "job" }), 0);
  t.equal(metrics.value("rlark_reconcile_total", { controller: "task", result: "success" }), 1);
});

t.test("stop drains queued keys and then no more reconciles happen", async (t) => {
  const { store, clock } = tempStore(t);
  for (const n of ["a", "b", "c"]) await store.create(job(n));
  const calls: string[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const m = new Manager({ store, clock, workers: 1, resyncPeriod: 60_000 });
  m.add({
    name: "job",
    kind: "Job",
    async reconcile(req) {
      await gate;
      calls.push(req.key);
    },
  });
  await m.start();
  await waitFor(
    "a running, b and c queued",
    () => m.queue("job").processing === 1 && m.queueDepth("job") === 2,
    often,
  );
  let stopped = false;
  const stopping = m.stop().then(() => {
    stopped = true;
  });
  await store.create(job("d"));
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  t.notOk(stopped, "stop waits for the reconcile in flight");
  release();
  await stopping;
  t.same(calls, ["a", "b", "c"], "queued keys were reconciled before stop resolved, d was not taken");
  clock.advance(120_000);
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  t.same(calls, ["a", "b", "c"]);
  t.equal(clock.pending, 0, "no timers left behind");
});

t.test("duplicate controller names and adds after start are refused", async (t) => {
  const { store, clock } = tempStore(t);
  const m = new Manager({ store, clock });
  m.add(recording());
  t.throws(() => m.add(recording()), /already added/);
  t.notOk(m.running);
  await m.start();
  t.ok(m.running);
  t.same(m.controllers(), [{ name: "job", kind: "Job", queueDepth: 0, processing: 0, delayed: 0 }]);
  t.throws(() => m.add(recording("other")), /before the manager starts/);
  await m.stop();
  t.notOk(m.running);
});

t.test("a reconcile can queue other keys of its controller", async (t) => {
  const { store, clock } = tempStore(t);
  await store.create(job("a"));
  const calls: string[] = [];
  const m = new Manager({ store, clock, resyncPeriod: 0 });
  m.add({
    name: "job",
    kind: "Job",
    reconcile(req, ctx) {
      calls.push(req.key);
      if (req.key === "a") {
        ctx.enqueue("b");
        ctx.enqueue("c", 1000);
      }
    },
  });
  await m.start();
  t.teardown(() => m.stop());
  await waitFor("b queued by a", () => calls.length === 2, often);
  t.same(clock.pendingDelays(), [1000]);
  clock.advance(1000);
  await waitFor("c after its delay", () => calls.length === 3, often);
  t.same(calls, ["a", "b", "c"]);
});
