// The event stream batches changes per client (operators/dashboard/events.ts): within a batch
// window only the newest change of each object is written, all in one write, and a client whose
// batch outgrows its bound is dropped (it resumes). A FakeClock decides when a batch is written.
// Real store, cache, HTTP server and client.
import { createServer, get, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import t, { type Test } from "tap";
import { createEventStream, EVENTS_PATH, type EventStreamLimits } from "../../operators/dashboard/events.ts";
import { createObjectCache } from "../../operators/dashboard/object-cache.ts";
import { FakeClock } from "../../operators/lib/clock.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import type { KubeObject, Store } from "../../operators/lib/store/index.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { tempStore } from "../lib/store/helpers.ts";

async function streamOf(t: Test, limits: EventStreamLimits = {}, jobs = "") {
  const { store } = tempStore(t);
  const clock = new FakeClock(Date.UTC(2026, 5, 1, 12));
  const cache = createObjectCache({ store, logger: silentLogger, clock });
  await cache.start();
  t.teardown(() => cache.stop());
  const events = createEventStream({
    cache,
    authenticate: (token) => (token === "alice-token" ? { subject: "alice", role: "admin" } : undefined),
    sourceStatus: () => null,
    config: {},
    clock,
    batchMs: 100,
    limits,
  });
  t.teardown(() => events.close());
  const server = createServer(
    (req, res) => void events.handle(req, res, new URL(req.url ?? "/", "http://x")),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => server.close());
  const { port } = server.address() as AddressInfo;
  const stream = { text: "", chunks: 0, ended: false };
  const response = await new Promise<IncomingMessage>((resolve) =>
    get(`http://127.0.0.1:${port}${EVENTS_PATH}?token=alice-token&jobs=${jobs}`, resolve),
  );
  response.setEncoding("utf8");
  response.on("data", (chunk: string) => {
    stream.text += chunk;
    stream.chunks++;
  });
  response.on("close", () => (stream.ended = true));
  t.teardown(() => response.destroy());
  await waitFor("the snapshot", () => stream.text.includes("event: snapshot"));
  return { store, cache, clock, stream };
}

const job = (name: string): KubeObject => ({
  apiVersion: "rlinf.io/v1alpha1",
  kind: "Job",
  metadata: { name },
  spec: { tasks: [] },
  status: { phase: "Pending", step: 0 },
});

async function bump(store: Store, name: string, step: number): Promise<KubeObject> {
  const current = (await store.get("Job", undefined, name))!;
  return store.updateStatus({ ...current, status: { phase: "Running", step } });
}

const changeFrames = (text: string) =>
  text
    .split("\n\n")
    .filter((f) => f.includes("event: change"))
    .map((f) => f);

t.test("a burst of changes becomes one write holding the newest change of each object", async (t) => {
  const { store, cache, clock, stream } = await streamOf(t, {}, "a,b");
  for (const name of ["a", "b"]) await store.create(job(name));
  let last: KubeObject | undefined;
  for (let step = 1; step <= 30; step++) {
    await bump(store, "a", step);
    last = await bump(store, "b", step);
  }
  // Everything reached the cache (and so the stream's batch) before the window ends.
  await waitFor(
    "the cache to hold the last change",
    () => cache.get("Job", undefined, "b")?.metadata.resourceVersion === last!.metadata.resourceVersion,
  );
  const before = stream.text.length;
  t.equal(changeFrames(stream.text).length, 0, "nothing is written before the batch window ends");
  const chunksBefore = stream.chunks;
  clock.advance(100);
  await waitFor("the batch", () => stream.text.includes(`id: ${last!.metadata.resourceVersion}\n`));
  const frames = changeFrames(stream.text.slice(before));
  t.equal(frames.length, 2, "one frame per object, not 62");
  t.match(frames[0], /"name":"a".*"step":30/s);
  t.match(frames[1], /"name":"b".*"step":30/s);
  t.ok(
    frames[1]!.includes(`id: ${last!.metadata.resourceVersion}`),
    "the last frame carries the newest id, to resume from",
  );
  t.equal(stream.chunks - chunksBefore, 1, "the batch arrived as one write");
});

t.test("a client whose batch outgrows its bound is dropped, to resume later", async (t) => {
  const { store, clock, stream } = await streamOf(t, { maxBatchedChanges: 5 }, "j0,j1,j2,j3,j4,j5");
  for (let i = 0; i < 6; i++) await store.create(job(`j${i}`));
  await waitFor("the stream to be dropped", () => stream.ended);
  clock.advance(100);
  t.equal(changeFrames(stream.text).length, 0, "none of the batch was written");
});
