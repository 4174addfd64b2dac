// The cleanup finalizer of a deleted Task is released once its cluster's agent has acknowledged
// the removal and reports none of its workloads; not before, and never on another cluster's word.
// Real store, real agent-sync and AgentSession; the test plays the agent over an in-process stream.

import t from "tap";
import { createAgentSync } from "../../operators/agent-sync/index.ts";
import { AGENT_CLEANUP_FINALIZER } from "../../operators/api/index.ts";
import type { KubeObject, Store } from "../../operators/lib/store/index.ts";
import type { Delta, Snapshot } from "../../operators/lib/tunnel/index.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { tempStore } from "../lib/store/helpers.ts";
import { type AgentLink, connectAgent } from "./agent-link.ts";
import { cluster, pod, recordingLogger, task } from "./fixtures.ts";

const finalizers = { finalizers: [AGENT_CLEANUP_FINALIZER] };

async function startSync(t: { teardown(fn: () => unknown): void }, store: Store) {
  const sync = createAgentSync({
    store,
    artifactDir: "/nonexistent",
    logger: recordingLogger(),
    debounceMs: 1,
  });
  await sync.start();
  t.teardown(() => sync.close());
  return sync;
}

/** Sends a report and waits until the hub has handled it (it writes the capabilities last). */
async function report(
  store: Store,
  agent: AgentLink,
  mark: string,
  pods: KubeObject[],
  tasks: KubeObject[],
): Promise<void> {
  agent.report(pods, tasks, [{ name: mark }]);
  await waitFor(`report ${mark} handled`, async () => {
    const status = (await store.get("Cluster", undefined, agent.cluster))?.status as
      | { capabilities?: { name: string }[] }
      | undefined;
    return status?.capabilities?.[0]?.name === mark;
  });
}

function sent(agent: AgentLink, type: "snapshot" | "delta") {
  return agent.received.filter((m): m is Snapshot | Delta => m.type === type);
}

t.test("released once the agent acknowledged the removal and reports no pod or Task of it", async (t) => {
  const { store } = tempStore(t);
  await store.create(cluster("east"));
  await store.create(task("east", "train-a", finalizers));
  await store.create(task("east", "train-b", finalizers));
  const sync = await startSync(t, store);
  const agent = connectAgent(t, sync, "east");
  const [snapshot] = await waitFor(
    "the first snapshot",
    () => sent(agent, "snapshot").length === 1 && sent(agent, "snapshot"),
  );
  agent.ack(snapshot!.generation);

  await store.delete("Task", "agent-east", "train-a");
  const [delta] = await waitFor(
    "the delta removing train-a",
    () => sent(agent, "delta").length === 1 && sent(agent, "delta"),
  );
  t.same((delta as Delta).deletes, [{ kind: "Task", namespace: "agent-east", name: "train-a" }]);
  const pods = [pod("east", "train-a-0", "train-a")];

  await report(store, agent, "not-acked", [], []);
  t.ok(await store.get("Task", "agent-east", "train-a"), "kept: the agent has not acknowledged the removal");

  agent.ack(delta!.generation);
  await report(store, agent, "pod-left", pods, []);
  t.ok(await store.get("Task", "agent-east", "train-a"), "kept: a pod of it still runs");

  await report(store, agent, "task-left", [], [task("east", "train-a")]);
  t.ok(await store.get("Task", "agent-east", "train-a"), "kept: the agent still names the Task");

  await report(store, agent, "gone", [], []);
  t.equal(await store.get("Task", "agent-east", "train-a"), undefined, "released, so the Task is gone");
  t.same(
    (await store.get("Task", "agent-east", "train-b"))?.metadata.finalizers,
    [AGENT_CLEANUP_FINALIZER],
    "a Task not being deleted keeps its finalizer",
  );
});

t.test("a Task deleted before its agent ever received it is released at the first report", async (t) => {
  const { store } = tempStore(t);
  await store.create(cluster("east"));
  await store.create(task("east", "train-a", finalizers));
  await store.delete("Task", "agent-east", "train-a");
  const sync = await startSync(t, store);
  const agent = connectAgent(t, sync, "east");
  await waitFor("the first snapshot", () => sent(agent, "snapshot").length === 1);
  t.same((sent(agent, "snapshot")[0] as Snapshot).objects, [], "the deleting Task is not sent");
  await report(store, agent, "first", [], []);
  t.equal(await store.get("Task", "agent-east", "train-a"), undefined);
});

t.test("another cluster's agent cannot release this cluster's Task", async (t) => {
  const { store } = tempStore(t);
  await store.create(cluster("east"));
  await store.create(cluster("west"));
  await store.create(task("east", "train-a", finalizers));
  await store.delete("Task", "agent-east", "train-a");
  const sync = await startSync(t, store);
  const west = connectAgent(t, sync, "west");
  await waitFor("west's first snapshot", () => sent(west, "snapshot").length === 1);
  await report(store, west, "from-west", [], []);
  const kept = await store.get("Task", "agent-east", "train-a");
  t.same(kept?.metadata.finalizers, [AGENT_CLEANUP_FINALIZER], "east's Task keeps its finalizer");
});
