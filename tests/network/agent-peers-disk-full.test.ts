// The fault matrix's "nodeserver × disk full" cell (docs/reliability.md), on the process runtime,
// where the agent writes its nodeserver's peers state into a file: with the disk full the write
// fails whole (the file in force stays as it was, no half-written temporary), the nodeserver goes
// on with the last state, and once space is back the agent writes the waiting state by itself,
// with no further change from the hub. Before, a failed write was logged and forgotten until the
// next DomainPeer change.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import http from "node:http";
import path from "node:path";
import t from "tap";
import { ProcessRuntime } from "../../operators/agent/runtimes/process/index.ts";
import type { DomainPeer, PeersState } from "../../operators/api/index.ts";
import { agentNodeserver } from "../../operators/cli/agent-network.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import { startAgentOnHub } from "../helpers/agent-on-hub.ts";
import { fillToLastByte, smallTmpfs } from "../helpers/full-disk.ts";
import { startRelayHub } from "../helpers/relay-hub.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

t.test("a full disk under the peers file: the last state stays in force, the new one follows", async (t) => {
  const { hub, dir, certificates } = await startRelayHub(t, "peers-full");
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
  const socketDir = await smallTmpfs(t, "rlark-peers-full-", "1m");
  const network = agentNodeserver({ dir: socketDir, node: "edge-1", logger: silentLogger });
  t.teardown(() => network.stop());
  await startAgentOnHub(t, hub, "edge", {
    runtime,
    runtimeKind: "process",
    onPeersState: network.onPeersState,
    domainRelay: hub.domainRelayAddress as string,
  });

  const creds = certificates.ensure("train", "edge");
  const pod = (name: string, ip: string) => ({
    name,
    namespace: "default",
    ip,
    localIP: "10.1.0.2",
    globalNamespace: "agent-edge",
  });
  const peer = await hub.store.create<DomainPeer>({
    apiVersion: "rlinf.io/v1alpha1",
    kind: "DomainPeer",
    metadata: { name: "train", namespace: "agent-edge" },
    spec: { cert: creds.certPem, key: creds.keyPem, prefixLen: 24, pods: [pod("p0", "100.98.0.10")] },
  });
  const file = path.join(socketDir, "peers.json");
  const pods = (): string[] =>
    existsSync(file)
      ? ((JSON.parse(readFileSync(file, "utf8")) as PeersState).domains[0]?.pods ?? []).map((p) => p.name)
      : [];
  const ipOf = (name: string) =>
    new Promise<string | undefined>((resolve, reject) => {
      http
        .get(
          { socketPath: path.join(socketDir, "nodeserver.sock"), path: `/get_ip?pod=default/${name}` },
          (res) => {
            let body = "";
            res.on("data", (c: Buffer) => {
              body += c.toString();
            });
            res.on("end", () => resolve((JSON.parse(body) as { ip?: string }).ip));
          },
        )
        .on("error", reject);
    });
  await waitFor("p0 in the peers file", () => pods().includes("p0"), onRealServers);
  await waitFor(
    "the nodeserver answers for p0",
    async () => (await ipOf("p0")) === "100.98.0.10",
    onRealServers,
  );

  const filler = path.join(socketDir, "filler");
  await fillToLastByte(filler);
  await hub.store.update<DomainPeer>({
    ...peer,
    spec: { ...peer.spec, pods: [pod("p0", "100.98.0.10"), pod("p1", "100.98.0.11")] },
  });
  const failed = await waitFor(
    "the agent reports the failed write",
    async () => {
      const cluster = await hub.store.get("Cluster", undefined, "edge");
      const text = JSON.stringify(cluster?.status ?? {});
      return /peers state/.test(text) && /ENOSPC|no space/i.test(text) ? text : undefined;
    },
    onRealServers,
  );
  t.match(failed, /peers state in .*(ENOSPC|no space)/i, "the Cluster's status names the failed write");
  // a few retries' worth of time with the disk full
  await new Promise((resolve) => setTimeout(resolve, 2500));
  t.same(pods(), ["p0"], "the file in force is the last whole one");
  t.same(
    readdirSync(socketDir).filter((name) => name.endsWith(".tmp")),
    [],
    "no half-written temporary left",
  );
  t.equal(await ipOf("p0"), "100.98.0.10", "the nodeserver goes on with the last state");
  t.equal(await ipOf("p1"), undefined, "and knows nothing of the new pod yet");

  await rm(filler);
  await waitFor("p1 in the peers file, with no further change", () => pods().includes("p1"), onRealServers);
  await waitFor(
    "the nodeserver answers for p1",
    async () => (await ipOf("p1")) === "100.98.0.11",
    onRealServers,
  );
  t.pass("the waiting state was written once space was back");
});
