// The hub's store watches end when their stream to the apiserver breaks (an apiserver restart, a
// connection reset): the agent sync must watch again and send what changed meanwhile, or every
// agent that does not reconnect stays on its old desired set for good. The chaos soak found it: a
// kubernetes-runtime agent whose tunnel survived a SIGSTOP (so it got no fresh snapshot) never got
// a Task's next generation nor the removal of a deleted Job's Task, after the store's apiserver had
// been killed earlier in the run. Real kubernetes store (the shared fleet's apiserver) reached
// through a TCP proxy whose connections the test resets.
import { createServer, type Socket, connect as tcpConnect } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";
import t from "tap";
import { createAgentSync } from "../../operators/agent-sync/index.ts";
import { API_VERSION, kinds } from "../../operators/api/index.ts";
import { openKubernetesStore } from "../../operators/lib/store/index.ts";
import type { Delta, Snapshot } from "../../operators/lib/tunnel/index.ts";
import { kubeStoreFixture } from "../helpers/kube-store.ts";
import { onKube, waitFor } from "../helpers/wait-for.ts";
import { connectAgent } from "./agent-link.ts";
import { cluster, recordingLogger, task } from "./fixtures.ts";

/** A TCP proxy to `host:port` whose open connections `reset()` ends with a RST. */
async function resettableProxy(host: string, port: number) {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = tcpConnect(port, host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => undefined);
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as { port: number }).port,
    reset() {
      for (const s of sockets) s.resetAndDestroy();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

t.test("the agent sync watches the store again after its watch ended, and sends what changed", async (t) => {
  const fixture = await kubeStoreFixture(t);
  const server = new URL(fixture.kubeConfig.getCurrentCluster()!.server);
  const proxy = await resettableProxy(server.hostname, Number(server.port));
  t.teardown(() => {
    proxy.reset();
    return proxy.close();
  });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: fixture.kubeConfig.clusters.map((c) => ({
      ...c,
      server: `https://127.0.0.1:${proxy.port}`,
      // the apiserver's certificate names 127.0.0.1 as well: the proxy is that address too
    })),
    users: fixture.kubeConfig.users,
    contexts: fixture.kubeConfig.contexts,
    currentContext: fixture.kubeConfig.currentContext,
  });
  const store = openKubernetesStore({
    kubeConfig,
    resources: kinds.map(({ kind, plural, namespaced }) => ({ kind, plural, namespaced })),
    apiVersion: API_VERSION,
    servedGroup: fixture.group,
  });
  t.teardown(() => store.close());
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
  // The writes' own connection may be one the reset broke: tried until one goes through.
  const retried = (what: string, write: () => Promise<unknown>) =>
    waitFor(
      what,
      () =>
        write().then(
          () => true,
          (e: Error) => (/not found|already exists/i.test(e.message) ? true : undefined),
        ),
      onKube,
    );
  await retried("train-a deleted", () => store.delete("Task", "agent-east", "train-a"));
  await retried("train-b created", () => store.create(task("east", "train-b")));
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
