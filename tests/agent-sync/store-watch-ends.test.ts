// The hub's store watches end when their stream to the apiserver breaks (an apiserver restart, a
// connection reset): the agent sync must watch again and send what changed meanwhile, or every
// agent that does not reconnect stays on its old desired set for good. The chaos soak found it: a
// kubernetes-runtime agent whose tunnel survived a SIGSTOP (so it got no fresh snapshot) never got
// a Task's next generation nor the removal of a deleted Job's Task, after the store's apiserver had
// been killed earlier in the run. Real kubernetes store (the shared fleet's apiserver) reached
// through a TCP proxy whose connections the test resets.
import t from "tap";
import { createAgentSync } from "../../operators/agent-sync/index.ts";
import type { Delta, Snapshot } from "../../operators/lib/tunnel/index.ts";
import { kubeStoreFixture } from "../helpers/kube-store.ts";
import { retriedWrite, storeThroughProxy } from "../helpers/store-through-proxy.ts";
import { onKube, waitFor } from "../helpers/wait-for.ts";
import { connectAgent } from "./agent-link.ts";
import { cluster, recordingLogger, task } from "./fixtures.ts";

t.test("the agent sync watches the store again after its watch ended, and sends what changed", async (t) => {
  const fixture = await kubeStoreFixture(t);
  const { store, proxy } = await storeThroughProxy(t, fixture);
  await store.create(cluster("east"));
  await store.create(task("east", "train-a"));

  const logger = recordingLogger();
  // No periodic resync: what this shows is the watch opened again.
  const sync = createAgentSync({ store, artifactDir: "/nonexistent", logger, debounceMs: 1, resyncMs: 0 });
  await sync.start();
  t.teardown(() => sync.close());
  const agent = connectAgent(t, sync, "east");
  const snapshot = await waitFor(
    "the first snapshot",
    () => agent.received.find((m): m is Snapshot => m.type === "snapshot"),
    onKube,
  );
  t.same(
    snapshot.objects.map((o) => o.metadata.name),
    ["train-a"],
  );

  proxy.reset();
  await retriedWrite("train-a deleted", () => store.delete("Task", "agent-east", "train-a"));
  await retriedWrite("train-b created", () => store.create(task("east", "train-b")));
  const deltas = () => agent.received.filter((m): m is Delta => m.type === "delta");
  await waitFor(
    "a delta with train-b and without train-a",
    () => {
      const upserts = deltas().flatMap((d) => d.upserts.map((o) => o.metadata.name));
      const deletes = deltas().flatMap((d) => d.deletes.map((r) => r.name));
      return upserts.includes("train-b") && deletes.includes("train-a");
    },
    onKube,
  );
  t.ok(
    logger.lines.some((l) => l.message === "store watch ended; watching again"),
    "the watch ended with the reset and was opened again",
  );
});
