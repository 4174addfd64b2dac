// The runtime's API clients keep their connections: many requests, one TLS handshake. The stock
// KubeConfig made a new connection pool for every request, so every server-side apply paid a
// TCP and TLS handshake. A real TLS server on 127.0.0.1 with its own CA counts the handshakes.
import { createServer } from "node:https";
import t from "tap";
import { makeCa, makeLeaf } from "../../../../hack/kube/pki.ts";
import { apiClients } from "../../../../operators/agent/runtimes/kubernetes/api-clients.ts";
import { kubeConfigFor, listenUntilTeardown } from "./api-server.ts";

t.test("sequential and concurrent requests share pooled connections", async (t) => {
  const ca = makeCa("rlark-test-ca");
  const serving = makeLeaf(ca, {
    commonName: "127.0.0.1",
    server: { dnsNames: ["localhost"], ips: ["127.0.0.1"] },
  });
  const client = makeLeaf(ca, { commonName: "rlark-test-admin", client: true });
  let handshakes = 0;
  let requests = 0;
  const server = createServer(
    { cert: serving.certPem, key: serving.keyPem, ca: ca.certPem, requestCert: true },
    (req, res) => {
      requests++;
      const name = decodeURIComponent(req.url?.split("/").pop() ?? "");
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name } }));
    },
  );
  server.on("secureConnection", () => handshakes++);
  const port = await listenUntilTeardown(t, server);
  const kc = kubeConfigFor(
    { server: `https://127.0.0.1:${port}`, caData: Buffer.from(ca.certPem).toString("base64") },
    {
      certData: Buffer.from(client.certPem).toString("base64"),
      keyData: Buffer.from(client.keyPem).toString("base64"),
    },
  );
  const clients = apiClients(kc);
  t.teardown(() => clients.close());

  for (let i = 0; i < 20; i++) {
    const ns = await clients.core.readNamespace({ name: `n${i}` });
    t.equal(ns.metadata?.name, `n${i}`);
  }
  // undici may open a second connection while the first is finishing its response: a handful, not 20
  t.ok(handshakes <= 2, `20 requests one after the other: ${handshakes} connection(s)`);

  for (let round = 0; round < 3; round++)
    await Promise.all(
      Array.from({ length: 8 }, (_, i) => clients.core.readNamespace({ name: `c${round}-${i}` })),
    );
  t.equal(requests, 44);
  // each round may add a few for the same reason; one per request (44) is what pooling avoids
  t.ok(handshakes <= 20, `3 rounds of 8 at once mostly reuse connections (${handshakes} in all, not 44)`);
});
