// The Domain page's live figures end to end: a process-runtime agent reads its nodeserver's
// GET /stats and the hub stores them as the DomainPeer's status.traffic, following each change.
// The nodeserver is a stand-in serving contract B's JSON on a real unix socket (the real one is
// built on a parallel branch, operators/network).
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { ProcessRuntime } from "../../../operators/agent/runtimes/process/index.ts";
import type { DomainPeer } from "../../../operators/api/index.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import { startAgentOnHub } from "../../helpers/agent-on-hub.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { jobYaml, rawTaskYaml } from "../../helpers/job-yaml.ts";
import { statsServer } from "../../helpers/stats-server.ts";
import { onRealServers, waitFor } from "../../helpers/wait-for.ts";

const files = {
  "cluster.yaml": `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata:
  name: edge
spec:
  runtime: process
`,
  "domain.yaml": `apiVersion: rlinf.io/v1alpha1
kind: Domain
metadata:
  name: lab
spec:
  cidr: 10.0.6.0/24
`,
  "job.yaml": jobYaml("robot", [rawTaskYaml({ command: ["sleep", "300"] })], { domain: "lab" }),
};

t.test("the agent reports its nodeserver's /stats as the DomainPeer's traffic", async (t) => {
  let served: unknown = {};
  let answers = 0;
  const socket = await statsServer(t, (send) => {
    answers++;
    send(200, JSON.stringify(served));
  });
  const { hub } = await startHubOnGit(t, { files });
  await waitFor(
    "the Cluster from git",
    async () => (await hub.store.get("Cluster", undefined, "edge")) ?? undefined,
    onRealServers,
  );
  const runtime = await ProcessRuntime.open({
    stateDir: path.join(await mkdtemp(path.join(tmpdir(), "rlark-traffic-")), "runtime"),
    logger: silentLogger,
  });
  t.teardown(() => runtime.stop({ terminatePods: true }));
  await startAgentOnHub(t, hub, "edge", {
    runtime,
    runtimeKind: "process",
    reportIntervalMs: 1_000,
    nodeserverSockets: [socket],
    statsIntervalMs: 100,
  });
  const peer = () => hub.store.get<DomainPeer>("DomainPeer", "agent-edge", "lab");
  const ip = await waitFor(
    "the pod's virtual IP",
    async () => (await peer())?.spec.pods?.[0]?.ip,
    onRealServers,
  );

  const figures = (bytes: number) => ({
    lab: {
      connections: [{ activeStreams: 1, lastActive: "2026-03-01T10:00:00.000Z" }],
      reverseLink: false,
      peers: [
        {
          source: ip,
          target: "10.0.6.200",
          activeStreams: 1,
          bytesSent: bytes,
          bytesReceived: 7,
          path: "hub",
        },
      ],
    },
    // a Domain this cluster holds no DomainPeer of is not reported
    other: { connections: [], reverseLink: false, peers: [] },
  });
  served = figures(1000);
  const first = await waitFor(
    "traffic on the DomainPeer",
    async () => (await peer())?.status?.traffic,
    onRealServers,
  );
  t.equal(first.poolConnections, 1);
  t.same(first.pairs, [
    { source: ip, target: "10.0.6.200", activeStreams: 1, bytesSent: 1000, bytesReceived: 7, path: "hub" },
  ]);
  t.notOk(await hub.store.get("DomainPeer", "agent-edge", "other"), "nothing made for a Domain not held");

  served = figures(5000);
  await waitFor(
    "the new figures on the DomainPeer",
    async () => (await peer())?.status?.traffic?.pairs[0]?.bytesSent === 5000,
    onRealServers,
  );
  t.pass("the figures follow the nodeserver's");

  // a nodeserver that answers nonsense changes nothing stored and stops nothing
  const before = answers;
  served = { lab: { connections: "many", peers: [] } };
  await waitFor("two more answers", () => answers >= before + 2, onRealServers);
  t.equal((await peer())?.status?.traffic?.pairs[0]?.bytesSent, 5000, "the last good figures stay");
  served = figures(9000);
  await waitFor(
    "good figures again",
    async () => (await peer())?.status?.traffic?.pairs[0]?.bytesSent === 9000,
    onRealServers,
  );
  t.pass("and good figures are taken again");
});
