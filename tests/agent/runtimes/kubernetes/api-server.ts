// A real HTTP server on 127.0.0.1:0 that answers every request as an API server does when it
// fails (one status, a Status body, headers), and a KubeConfig pointing at it.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
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
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: "c",
        server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        skipTLSVerify: true,
      },
    ],
    users: [{ name: "u" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  return kc;
}
