// The agent-sync's debounce and the Cluster status timestamps run on the Clock it is given.
// Real store, real agent-sync and AgentSession; the test plays the agent over an in-process stream.

import t from "tap";
import { createAgentSync } from "../../operators/agent-sync/index.ts";
import { FakeClock } from "../../operators/lib/clock.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { tempStore } from "../lib/store/helpers.ts";
import { connectAgent } from "./agent-link.ts";
import { cluster, recordingLogger, task } from "./fixtures.ts";

t.test("a burst of changes becomes a delta when the clock has moved past the debounce", async (t) => {
  const { store } = tempStore(t);
  await store.create(cluster("east"));
  const clock = new FakeClock(Date.UTC(2026, 5, 1, 12));
  const sync = createAgentSync({
    store,
    artifactDir: "/nonexistent",
    logger: recordingLogger(),
    debounceMs: 50,
    clock,
  });
  await sync.start();
  t.teardown(() => sync.close());
  const agent = connectAgent(t, sync, "east");
  await waitFor("the snapshot", () => agent.received.length === 1);
  const heartbeat = await waitFor("the hello's heartbeat time", async () => {
    const status = (await store.get("Cluster", undefined, "east"))?.status as
      | { lastHeartbeatTime?: string }
      | undefined;
    return status?.lastHeartbeatTime;
  });
  t.equal(heartbeat, "2026-06-01T12:00:00.000Z", "stamped with the clock's time");

  await store.create(task("east", "train-a"));
  await store.create(task("east", "train-b"));
  await waitFor("the debounce timer", () => clock.pendingDelays().includes(50));
  t.equal(agent.received.length, 1, "nothing sent while the clock stands still");
  clock.advance(50);
  const delta = await waitFor("the delta", () => agent.received[1]);
  t.equal(delta.type, "delta");
  t.same(
    delta.type === "delta" ? delta.upserts.map((o) => o.metadata.name).sort() : [],
    ["train-a", "train-b"],
    "one delta for the burst",
  );

  sync.onClusterState("east", "Offline");
  const transition = await waitFor("the transition time", async () => {
    const status = (await store.get("Cluster", undefined, "east"))?.status as
      | { lastTransitionTime?: string }
      | undefined;
    return status?.lastTransitionTime;
  });
  t.equal(transition, "2026-06-01T12:00:00.050Z");
});
