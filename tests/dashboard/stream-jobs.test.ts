// The event stream carries Jobs and Tasks only for the Jobs it names (the page on screen) and
// a summary of all Jobs instead (operators/dashboard/events.ts): a snapshot that held every Job
// was 88 MiB at 100,000 and held the hub's event loop for seconds (docs/benchmarks/dashboard-paging.md).
// Real store, cache, HTTP server and client; a FakeClock decides when a batch is written.
import { createServer, get, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import t, { type Test } from "tap";
import { createEventStream, EVENTS_PATH } from "../../operators/dashboard/events.ts";
import { JobSummary } from "../../operators/dashboard/job-summary.ts";
import { createObjectCache } from "../../operators/dashboard/object-cache.ts";
import { FakeClock } from "../../operators/lib/clock.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import type { KubeObject, Store } from "../../operators/lib/store/index.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { tempStore } from "../lib/store/helpers.ts";

interface Frame {
  event: string;
  id?: string;
  data: string;
}

function frames(text: string): Frame[] {
  return text
    .split("\n\n")
    .filter((f) => f.includes("data: "))
    .map((f) => {
      const line = (name: string) =>
        f
          .split("\n")
          .find((l) => l.startsWith(`${name}: `))
          ?.slice(name.length + 2);
      return {
        event: line("event") ?? "message",
        ...(line("id") ? { id: line("id") } : {}),
        data: line("data")!,
      };
    });
}

async function hubOf(t: Test) {
  const { store } = tempStore(t);
  const clock = new FakeClock(Date.UTC(2026, 5, 1, 12));
  const cache = createObjectCache({ store, logger: silentLogger, clock });
  // 30 Jobs, each with a Task and a Pod, before anything starts: the snapshot's case.
  for (let i = 0; i < 30; i++)
    await seedJob(store, `j${String(i).padStart(2, "0")}`, i % 3 ? "Running" : "Failed");
  await cache.start();
  t.teardown(() => cache.stop());
  const events = createEventStream({
    cache,
    authenticate: (token) => (token === "alice-token" ? { subject: "alice", role: "admin" } : undefined),
    sourceStatus: () => null,
    config: {},
    clock,
    batchMs: 100,
  });
  t.teardown(() => events.close());
  const server = createServer(
    (req, res) => void events.handle(req, res, new URL(req.url ?? "/", "http://x")),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => server.close());
  const { port } = server.address() as AddressInfo;
  const open = async (query: string) => {
    const stream = { status: 0, text: "", ended: false };
    const response = await new Promise<IncomingMessage>((resolve) =>
      get(`http://127.0.0.1:${port}${EVENTS_PATH}?token=alice-token${query}`, resolve),
    );
    stream.status = response.statusCode ?? 0;
    response.setEncoding("utf8");
    response.on("data", (chunk: string) => (stream.text += chunk));
    response.on("close", () => (stream.ended = true));
    t.teardown(() => response.destroy());
    return stream;
  };
  return { store, cache, clock, open };
}

async function seedJob(store: Store, name: string, phase: string) {
  const job = await store.create({
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Job",
    metadata: { name },
    spec: { tasks: [] },
  });
  await store.updateStatus({ ...job, status: { phase } });
  await store.create({
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Task",
    metadata: { name: `${name}-main`, namespace: "agent-a" },
    spec: { job: name, template: { name: "main" } },
  });
  await store.create({
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Pod",
    metadata: { name: `${name}-main-0`, namespace: "agent-a", labels: { "rlinf.io/job": name } },
    spec: { task: `${name}-main` },
  });
}

const named = (objects: KubeObject[], kind: string) =>
  objects
    .filter((o) => o.kind === kind)
    .map((o) => o.metadata.name)
    .sort();

t.test(
  "the snapshot holds the named Jobs with their Tasks and a summary of all; a named Job's change is sent, another's only counted",
  async (t) => {
    const { store, cache, clock, open } = await hubOf(t);
    const stream = await open("&jobs=j01,j02");
    await waitFor("the snapshot", () => stream.text.includes("event: snapshot"));
    const snapshot = JSON.parse(frames(stream.text).find((f) => f.event === "snapshot")!.data) as {
      objects: KubeObject[];
      jobs: string[];
      summary: { total: number; phases: Record<string, number> };
    };
    t.same(named(snapshot.objects, "Job"), ["j01", "j02"], "no Job the page does not show");
    t.same(named(snapshot.objects, "Task"), ["j01-main", "j02-main"]);
    t.equal(
      named(snapshot.objects, "Pod").length,
      30,
      "Pods whole: as many as run (the Clusters page lists them)",
    );
    t.same(snapshot.jobs, ["j01", "j02"]);
    t.same(snapshot.summary.total, 30, "all Jobs counted");
    t.same(snapshot.summary.phases, { Failed: 10, Running: 20 });

    // A Job the page does not show: counted in a summary (with the id to resume from), not sent.
    const other = await store.updateStatus({
      ...(await store.get("Job", undefined, "j05"))!,
      status: { phase: "Succeeded" },
    });
    await waitFor(
      "the cache to hold it",
      () => cache.get("Job", undefined, "j05")?.metadata.resourceVersion === other.metadata.resourceVersion,
    );
    clock.advance(100);
    await waitFor("a summary", () => frames(stream.text).some((f) => f.event === "summary"));
    const summary = frames(stream.text).find((f) => f.event === "summary")!;
    t.equal(summary.id, other.metadata.resourceVersion, "the summary says how far the stream was brought");
    t.same(JSON.parse(summary.data).phases, { Failed: 10, Running: 19, Succeeded: 1 });
    t.equal(JSON.parse(summary.data).revision, other.metadata.resourceVersion);
    t.notOk(
      frames(stream.text).some((f) => f.event === "change"),
      "the change of a Job not shown is not sent",
    );

    // A shown Job's change, its Task's and a new Pod of it: all sent.
    const mine = await store.updateStatus({
      ...(await store.get("Job", undefined, "j02"))!,
      status: { phase: "Succeeded", run: 2 },
    });
    const task = await store.updateStatus({
      ...(await store.get("Task", "agent-a", "j01-main"))!,
      status: { phase: "Running" },
    });
    await store.create({
      apiVersion: "rlinf.io/v1alpha1",
      kind: "Pod",
      metadata: { name: "j01-main-1", namespace: "agent-a", labels: { "rlinf.io/job": "j01" } },
      spec: { task: "j01-main" },
    });
    await store.updateStatus({
      ...(await store.get("Task", "agent-a", "j07-main"))!,
      status: { phase: "Running" },
    });
    await waitFor("the cache to hold them", () => cache.get("Pod", "agent-a", "j01-main-1") !== undefined);
    await waitFor("…and the last", () => cache.get("Task", "agent-a", "j07-main")?.status !== undefined);
    clock.advance(100);
    await waitFor("the shown Job's change", () =>
      frames(stream.text).some((f) => f.id === mine.metadata.resourceVersion),
    );
    const changes = frames(stream.text).filter((f) => f.event === "change");
    t.same(
      changes.map((f) => f.id),
      [mine.metadata.resourceVersion, task.metadata.resourceVersion, changes[2]?.id],
      "the Job, its Task and its new Pod; nothing of j07",
    );
    t.match(JSON.parse(changes[2]!.data).object.metadata.name, "j01-main-1");
    t.same(JSON.parse(changes[0]!.data).object.status, { phase: "Succeeded", run: 2 });
  },
);

t.test(
  "a stream reopened with other Jobs and its last id resumes: their objects as now, no snapshot",
  async (t) => {
    const { store, cache, clock, open } = await hubOf(t);
    const first = await open("&jobs=j01");
    await waitFor("the snapshot", () => first.text.includes("event: snapshot"));
    const lastId = frames(first.text).find((f) => f.event === "snapshot")!.id!;
    const changed = await store.updateStatus({
      ...(await store.get("Job", undefined, "j09"))!,
      status: { phase: "Stopped" },
    });
    await waitFor(
      "the cache",
      () =>
        (cache.get("Job", undefined, "j09")?.status as { phase?: string } | undefined)?.phase === "Stopped",
    );
    clock.advance(100);
    const second = await open(`&jobs=j09,j10&lastEventId=${lastId}`);
    await waitFor("the selection", () => frames(second.text).some((f) => f.event === "selection"));
    await waitFor("the summary", () => frames(second.text).some((f) => f.event === "summary"));
    const got = frames(second.text);
    t.notOk(
      got.some((f) => f.event === "snapshot"),
      "no snapshot",
    );
    t.ok(got.some((f) => f.event === "resume"));
    const selection = JSON.parse(got.find((f) => f.event === "selection")!.data) as { objects: KubeObject[] };
    t.same(named(selection.objects, "Job"), ["j09", "j10"]);
    t.same(named(selection.objects, "Task"), ["j09-main", "j10-main"]);
    t.equal(
      selection.objects.find((o) => o.metadata.name === "j09")?.metadata.resourceVersion,
      changed.metadata.resourceVersion,
      "the missed change is in the object as it is now",
    );
    t.notOk(
      got.some((f) => f.event === "change"),
      "no Job's change replayed",
    );
    t.equal(
      got.find((f) => f.event === "summary")!.id,
      cache.cursor(),
      "the summary carries where it resumed to",
    );
  },
);

t.test("a stream naming too many Jobs or no Job names is refused with a 400", async (t) => {
  const { open } = await hubOf(t);
  const many = await open(`&jobs=${Array.from({ length: 201 }, (_, i) => `j${i}`).join(",")}`);
  t.equal(many.status, 400);
  await waitFor("the answer", () => many.ended);
  t.match(JSON.parse(many.text).message, "201 Jobs named, at most 200");
  const bad = await open("&jobs=Not_A_Name");
  t.equal(bad.status, 400);
  await waitFor("the answer", () => bad.ended);
  t.match(JSON.parse(bad.text).message, 'jobs: "Not_A_Name" is not a Job name');
});

t.test("the summary adds and removes Jobs exactly: quota held, Jobs waiting, the default team", (t) => {
  const job = (name: string, status: Record<string, unknown>, team?: string) =>
    ({
      apiVersion: "rlinf.io/v1alpha1",
      kind: "Job",
      metadata: { name },
      spec: { tasks: [], ...(team ? { team } : {}) },
      status,
    }) as never;
  const held = (name: string, phase: string) =>
    job(name, { phase, quota: { team: "robots", request: { cpu: "500m", memory: "1Gi" } } });
  const waiting = (name: string, team?: string) =>
    job(
      name,
      {
        phase: "Pending",
        conditions: [{ type: "QuotaReserved", status: "False", message: `${name} waits` }],
      },
      team,
    );
  const summary = new JobSummary("1");
  const teams = [{ metadata: { name: "robots" }, spec: { default: true } }] as never;
  for (let i = 0; i < 3; i++) summary.add(held(`h${i}`, "Running"));
  summary.add(held("done", "Succeeded"));
  summary.add(waiting("w1"));
  summary.add(waiting("w2", "vision"));
  t.same(summary.view(teams).teams.robots, {
    used: { cpu: 1.5, memory: 3 * 2 ** 30 },
    waiting: [{ name: "w1", message: "w1 waits" }],
    waitingCount: 1,
  });
  t.same(summary.view(teams).teams.vision?.waiting, [{ name: "w2", message: "w2 waits" }]);
  for (let i = 0; i < 3; i++) summary.remove(held(`h${i}`, "Running"));
  summary.remove(waiting("w1"));
  t.same(summary.view(teams).teams.robots, undefined, "nothing held, nobody waiting");
  t.same(summary.view(teams).phases, { Pending: 1, Succeeded: 1 });
  t.equal(summary.view(teams).total, 2);
  t.end();
});
