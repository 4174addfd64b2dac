// A real HTTP server on 127.0.0.1:0 that answers every request as an API server does when it
// fails (one status, a Status body, headers), and a KubeConfig pointing at it; the listening and
// the KubeConfig on their own for tests that serve something else.
import { createServer } from "node:http";
import type { AddressInfo, Server } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";
import type { Test } from "tap";

/** `onRequest` counts or inspects what the client asked. */
export async function apiServer(
  t: Test,
  status: number,
  body: string | undefined,
  onRequest: () => void = () => {},
): Promise<KubeConfig> {
  const server = createServer((_req, res) => {
    onRequest();
    res.writeHead(status, { "content-type": "application/json", "audit-id": "0f3c-secret-ish-header" });
    res.end(body);
  });
  const port = await listenUntilTeardown(t, server);
  return kubeConfigFor({ server: `http://127.0.0.1:${port}`, skipTLSVerify: true });
}

/** Listens on 127.0.0.1 on a free port, closed when the test ends; the port. */
export async function listenUntilTeardown(t: Test, server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as AddressInfo).port;
}

/** A KubeConfig whose one context is `cluster` as `user`. */
export function kubeConfigFor(
  cluster: { server: string; caData?: string; skipTLSVerify?: boolean },
  user: { certData?: string; keyData?: string } = {},
): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "c", ...cluster }],
    users: [{ name: "u", ...user }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  return kc;
}
