// A process-runtime agent runs this machine's nodeserver (started with the first DomainPeer) and
// keeps its peers state in step with the DomainPeers the hub hands over.
import { existsSync, readFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import t from "tap";
import { ProcessRuntime } from "../../operators/agent/runtimes/process/index.ts";
import type { DomainPeer, PeersState } from "../../operators/api/index.ts";
import { agentNodeserver } from "../../operators/cli/agent-network.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import { startAgentOnHub } from "../helpers/agent-on-hub.ts";
import { startRelayHub } from "../helpers/relay-hub.ts";
import { waitFor } from "../helpers/wait-for.ts";

t.test("the agent writes its DomainPeers into the nodeserver's peers state on every change", async (t) => {
  const { hub, dir, certificates } = await startRelayHub(t, "agent-peers");
  await hub.store.create({
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Cluster",
    metadata: { name: "edge" },
    spec: { runtime: "process" },
  });
  const runtime = await ProcessRuntime.open({
    stateDir: path.join(dir, "runtime"),
    nodeName: "edge-1",
    agentVersion: "test",
    logger: silentLogger,
  });
  t.teardown(() => runtime.stop());
  const socketDir = path.join(dir, "run");
  const network = agentNodeserver({
    dir: socketDir,
    node: "edge-1",
    logger: silentLogger,
  });
  t.teardown(() => network.stop());
  await startAgentOnHub(t, hub, "edge", {
    runtime,
    runtimeKind: "process",
    onPeersState: network.onPeersState,
    domainRelay: hub.domainRelayAddress as string,
  });

  t.notOk(
    existsSync(path.join(socketDir, "nodeserver.sock")),
    "no nodeserver runs before the agent holds a DomainPeer",
  );
  const creds = certificates.ensure("train", "edge");
  const pod = {
    name: "p0",
    namespace: "default",
    ip: "100.98.0.10",
    localIP: "10.1.0.2",
    globalNamespace: "agent-edge",
  };
  const peer = await hub.store.create<DomainPeer>({
    apiVersion: "rlinf.io/v1alpha1",
    kind: "DomainPeer",
    metadata: { name: "train", namespace: "agent-edge" },
    spec: { cert: creds.certPem, key: creds.keyPem, prefixLen: 24, pods: [pod] },
  });
  const file = path.join(socketDir, "peers.json");
  const read = (): PeersState | undefined =>
    existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : undefined;
  const state = await waitFor("peers.json written", () => read()?.domains[0]?.domain === "train" && read());
  t.equal(state.globalNamespace, "agent-edge");
  t.same(
    state.hub,
    { address: hub.domainRelayAddress, caPem: hub.pki.ca.certPem },
    "the relay and the pinned CA",
  );
  t.same(state.domains[0]?.pods, [pod]);
  // The nodeserver runs in this process: ask it without blocking the event loop.
  const getIp = () =>
    new Promise<unknown>((resolve, reject) => {
      http
        .get(
          { socketPath: path.join(socketDir, "nodeserver.sock"), path: "/get_ip?pod=default/p0" },
          (res) => {
            let body = "";
            res.on("data", (c: Buffer) => {
              body += c.toString();
            });
            res.on("end", () => resolve(JSON.parse(body)));
          },
        )
        .on("error", reject);
    });
  t.same(
    await waitFor("the nodeserver answers /get_ip", async () => {
      const answer = (await getIp()) as { ip?: string };
      return answer.ip === "100.98.0.10" && answer;
    }),
    { ip: "100.98.0.10", prefixLength: 24, domain: "train" },
  );
  await waitFor("its reverse link reached the hub", () =>
    hub.domainRelay
      ?.stats()
      .reverseLinks.some((l) => l.domain === "train" && l.globalNamespace === "agent-edge"),
  );

  const second = { ...pod, name: "p1", ip: "100.98.0.11" };
  await hub.store.update<DomainPeer>({ ...peer, spec: { ...peer.spec, pods: [pod, second] } });
  await waitFor("a new pod shows", () => read()?.domains[0]?.pods?.length === 2);
  await hub.store.delete("DomainPeer", "agent-edge", "train");
  await waitFor("a removed DomainPeer goes", () => read()?.domains.length === 0);
  t.pass("peers state follows the DomainPeers");
});
