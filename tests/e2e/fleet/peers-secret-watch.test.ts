// The nodeserver's watch of the Secret rlark-domain-peers (`--peers-secret`) through a real API
// server, while the Secret stays unchanged for longer than the client's idle timeout. client-node's
// Watch ends a watch that has carried nothing for 30 s with a TimeoutError; the nodeserver took
// that for a failure, and a nodeserver pod on a real node logged "watching the peers Secret
// failed ... TimeoutError" every 30 s, then listed again after a second's back-off (issue 24). A
// quiet Secret is normal: the watch is opened again at once, from where it was, with no warning,
// and a change after several such rounds still arrives. Here the idle timeout is short and the
// API server is reached through a TCP proxy that counts connections, so the test waits for
// rounds, not for time.
import { createConnection, createServer, type Socket } from "node:net";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import t, { type Test } from "tap";
import { domainPeersSecret } from "../../../operators/agent/runtimes/kubernetes/index.ts";
import { type PeersState, peersStateFrom } from "../../../operators/api/index.ts";
import { peersFromSecret } from "../../../operators/network/peers-from-secret.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc } = fleetCluster(0);

/** A TCP proxy to the cluster's API server that counts the connections made through it. */
async function countingProxy(t: Test): Promise<{ server: string; connections: () => number }> {
  const upstream = new URL(kc.getCurrentCluster()?.server ?? "");
  const sockets = new Set<Socket>();
  let connections = 0;
  const proxy = createServer((client) => {
    connections++;
    const api = createConnection({ host: upstream.hostname, port: Number(upstream.port) });
    for (const s of [client, api]) {
      sockets.add(s);
      s.on("error", () => undefined);
      s.on("close", () => {
        sockets.delete(s);
        client.destroy();
        api.destroy();
      });
    }
    client.pipe(api).pipe(client);
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  t.teardown(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => proxy.close(() => resolve()));
  });
  const port = (proxy.address() as { port: number }).port;
  return { server: `https://127.0.0.1:${port}`, connections: () => connections };
}

const state = (ip: string): PeersState =>
  peersStateFrom(
    [
      {
        domain: "lab",
        spec: {
          cert: "CERT",
          key: "KEY",
          prefixLen: 24,
          pods: [{ name: "a-0", namespace: "ml", ip, globalNamespace: "agent-gpu" }],
        },
      },
    ],
    "agent-gpu",
  );

t.test("a quiet peers Secret is watched again without a warning, and its changes still arrive", async (t) => {
  const namespace = await testNamespace(t, kc, "peers-watch");
  const { server, connections } = await countingProxy(t);
  const through = new KubeConfig();
  through.loadFromOptions({
    clusters: kc.clusters.map((c) => ({ ...c, server })),
    users: kc.users,
    contexts: kc.contexts,
    currentContext: kc.currentContext,
  });
  const complaints: string[] = [];
  const complain = (message: string, fields?: Record<string, unknown>) =>
    complaints.push(`${message} ${JSON.stringify(fields)}`);
  const abort = new AbortController();
  const seen: PeersState[] = [];
  const reading = (async () => {
    for await (const s of peersFromSecret({
      kubeConfig: through,
      namespace,
      name: "rlark-domain-peers",
      // short, so rounds come quickly; long enough that a loaded API server still answers a
      // watch's request (a watch that never connected is a failure, and is warned of)
      idleTimeoutMs: 3000,
      logger: { info() {}, warn: complain, error: complain },
      signal: abort.signal,
    }))
      seen.push(s);
  })();
  t.teardown(async () => {
    abort.abort();
    await reading;
  });

  await waitFor("the first state: no Secret, no Domains", () => seen.length === 1, onKube);
  t.same(seen[0]?.domains, []);
  const rounds = async (n: number) => {
    const from = connections();
    await waitFor(
      `${n} more connections: quiet watches ended and opened again`,
      () => connections() >= from + n,
      onKube,
    );
  };
  await rounds(3);
  t.same(complaints, [], "no warning for a watch that was only quiet");

  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespacedSecret({ namespace, body: domainPeersSecret(namespace, state("10.0.0.2")) });
  await waitFor("the Secret's state", () => seen.length === 2, onKube);
  t.same(seen[1], state("10.0.0.2"), "the created Secret's state, after several quiet rounds");

  await rounds(2);
  await core.replaceNamespacedSecret({
    namespace,
    name: "rlark-domain-peers",
    body: domainPeersSecret(namespace, state("10.0.0.3")),
  });
  await waitFor("the changed state", () => seen.length === 3, onKube);
  t.same(seen[2], state("10.0.0.3"), "a change after more quiet rounds");
  t.same(complaints, [], "still no warning");
});
