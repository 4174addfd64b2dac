// The watched collection's backoff while the API server fails runs on the Clock it is given: the
// next list comes when the clock has moved by the backoff. A real HTTP server answers 503.
import t from "tap";
import { WatchedCollection } from "../../../../operators/agent/runtimes/kubernetes/watch/watched-collection.ts";
import { FakeClock } from "../../../../operators/lib/clock.ts";
import { silentLogger } from "../../../../operators/lib/logger.ts";
import { waitFor } from "../../../helpers/wait-for.ts";
import { apiServer } from "./api-server.ts";

t.test("a failing list is retried after each backoff on the collection's clock", async (t) => {
  let requests = 0;
  const status = { kind: "Status", status: "Failure", code: 503, message: "down for a test" };
  const kubeConfig = await apiServer(t, 503, JSON.stringify(status), () => requests++);
  const clock = new FakeClock(Date.now());
  const collection = new WatchedCollection({
    kubeConfig,
    apiVersion: "v1",
    kind: "ConfigMap",
    path: "/api/v1/configmaps",
    onChange: () => {},
    logger: silentLogger,
    backoff: { initialMs: 1000, maxMs: 8000 },
    clock,
  });
  collection.start();
  t.teardown(() => collection.stop());

  // Jittered: half the step fixed, half random, so 0.5–1 s after the first failure.
  const first = await waitFor("the first backoff", () =>
    clock.pendingDelays().find((delay) => delay >= 500 && delay <= 1000),
  );
  const afterFirst = requests;
  t.ok(afterFirst > 0, "the server was asked");
  clock.advance(first - 1);
  t.same(clock.pendingDelays(), [1], "still waiting a millisecond short of the backoff");
  clock.advance(1);
  await waitFor("the second backoff, 1–2 s", () =>
    clock.pendingDelays().find((delay) => delay >= 1000 && delay <= 2000),
  );
  t.ok(requests > afterFirst, "listed again");
  t.equal(collection.lists, 0, "no list succeeded");
});
