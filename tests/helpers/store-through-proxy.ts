// A kubernetes store whose connections to the apiserver the test can reset, as an apiserver
// restart or a broken network path does: every watch of the store (its informer caches, and the
// watches the hub's components open) ends at once with ECONNRESET. Tests of "a watch that ended
// is opened again" use it on the shared fleet's apiserver (tests/helpers/kube-store.ts). The same
// proxy can also go silent (freeze), as a partition or a frozen apiserver looks.
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
  /**
   * Silence, as a partition looks from either end: bytes are dropped both ways and new
   * connections are accepted but never answered. No reset, no refusal.
   */
  freeze(): void;
  /** Answers again; the connections the freeze broke (bytes dropped) are closed. */
  thaw(): void;
  close(): Promise<void>;
}

/** A TCP proxy to `host:port` that the test can reset (RST every connection) or freeze. */
export async function resettableProxy(host: string, port: number): Promise<ResettableProxy> {
  const sockets = new Set<Socket>();
  let frozen = false;
  const track = (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    s.on("error", () => undefined);
  };
  const server = createServer((client) => {
    track(client);
    if (frozen) return; // accepted, never answered
    const upstream = tcpConnect(port, host);
    track(upstream);
    client.on("data", (chunk) => frozen || upstream.write(chunk));
    upstream.on("data", (chunk) => frozen || client.write(chunk));
    client.on("end", () => upstream.end());
    upstream.on("end", () => client.end());
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as { port: number }).port,
    reset() {
      for (const s of sockets) s.resetAndDestroy();
    },
    freeze() {
      frozen = true;
    },
    thaw() {
      frozen = false;
      for (const s of sockets) s.destroy();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** `kubeConfig` with its clusters reached through `proxy` (the apiserver's certificate names 127.0.0.1). */
export function kubeConfigThrough(kubeConfig: KubeConfig, proxy: { port: number }): KubeConfig {
  const through = new KubeConfig();
  through.loadFromOptions({
    clusters: kubeConfig.clusters.map((c) => ({ ...c, server: `https://127.0.0.1:${proxy.port}` })),
    users: kubeConfig.users,
    contexts: kubeConfig.contexts,
    currentContext: kubeConfig.currentContext,
  });
  return through;
}

/** A resettable proxy to the apiserver `kubeConfig` names; closed at the end of the test. */
export async function apiserverProxy(t: Test, kubeConfig: KubeConfig): Promise<ResettableProxy> {
  const server = new URL(kubeConfig.getCurrentCluster()!.server);
  const proxy = await resettableProxy(server.hostname, Number(server.port));
  t.teardown(() => {
    proxy.reset();
    return proxy.close();
  });
  return proxy;
}

/** The fixture's store (its CRD group), reached through a resettable proxy; both closed at the end. */
export async function storeThroughProxy(
  t: Test,
  fixture: KubeStoreFixture,
): Promise<{ store: KubernetesStore; proxy: ResettableProxy }> {
  const proxy = await apiserverProxy(t, fixture.kubeConfig);
  const kubeConfig = kubeConfigThrough(fixture.kubeConfig, proxy);
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
