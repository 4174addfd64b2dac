// A kubernetes store whose connections to the apiserver the test can reset, as an apiserver
// restart or a broken network path does: every watch of the store (its informer caches, and the
// watches the hub's components open) ends at once with ECONNRESET. Tests of "a watch that ended
// is opened again" use it on the shared fleet's apiserver (tests/helpers/kube-store.ts).
import { createServer, type Socket, connect as tcpConnect } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";
import type { Test } from "tap";
import { API_VERSION, kinds } from "../../operators/api/index.ts";
import { type KubernetesStore, openKubernetesStore } from "../../operators/lib/store/index.ts";
import type { KubeStoreFixture } from "./kube-store.ts";
import { onKube, waitFor } from "./wait-for.ts";

export interface ResettableProxy {
  port: number;
  /** Ends every open connection with a RST (both sides). */
  reset(): void;
  close(): Promise<void>;
}

/** A TCP proxy to `host:port` whose open connections `reset()` ends with a RST. */
export async function resettableProxy(host: string, port: number): Promise<ResettableProxy> {
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

/** The fixture's store (its CRD group), reached through a resettable proxy; both closed at the end. */
export async function storeThroughProxy(
  t: Test,
  fixture: KubeStoreFixture,
): Promise<{ store: KubernetesStore; proxy: ResettableProxy }> {
  const server = new URL(fixture.kubeConfig.getCurrentCluster()!.server);
  const proxy = await resettableProxy(server.hostname, Number(server.port));
  t.teardown(() => {
    proxy.reset();
    return proxy.close();
  });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    // the apiserver's certificate names 127.0.0.1: the proxy is that address too
    clusters: fixture.kubeConfig.clusters.map((c) => ({ ...c, server: `https://127.0.0.1:${proxy.port}` })),
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
  return { store, proxy };
}

/**
 * Runs a write until one goes through: right after a reset the write's own connection may be one
 * the reset broke. "not found" and "already exists" count as done (an earlier try went through).
 */
export function retriedWrite(what: string, write: () => Promise<unknown>): Promise<true> {
  return waitFor(
    what,
    () =>
      write().then(
        () => true as const,
        (e: Error) => (/not found|already exists/i.test(e.message) ? (true as const) : undefined),
      ),
    onKube,
  );
}
