// The hub's status documents on a real status branch: a real SQLite store, the real writer, a
// real git repository. Heartbeats and gauges change every few seconds on an idle hub; only what a
// person would care about (phases, conditions, placements, versions) may make a commit.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import { createStatusBranchWriter, statusBranchPath } from "../../operators/feedback/index.ts";
import { createStatusDocuments, statusDocuments } from "../../operators/hub/status-documents.ts";
import { FakeClock } from "../../operators/lib/clock.ts";
import { type KubeObject, openSqliteStore } from "../../operators/lib/store/index.ts";
import { createGitRepository } from "../../operators/source/index.ts";
import { createGitServer } from "../helpers/git-server.ts";

const cluster = (status: Record<string, unknown>): KubeObject => ({
  apiVersion: "rlinf.io/v1alpha1",
  kind: "Cluster",
  metadata: { name: "local" },
  spec: { runtime: "process" },
  status,
});

const node = (status: Record<string, unknown>): KubeObject => ({
  apiVersion: "rlinf.io/v1alpha1",
  kind: "Node",
  metadata: { name: "vm", namespace: "agent-local" },
  spec: { unschedulable: false },
  status,
});

const nodeStatus = (at: string, usedBytes: number, memoryPressure: "True" | "False") => ({
  phase: "Online",
  capacity: { cpu: "2", memory: "2048Ki" },
  requested: { pods: "0" },
  disk: { usedBytes, totalBytes: 1_000_000 },
  lastHeartbeatTime: at,
  conditions: [
    { type: "Ready", status: "True", reason: "AgentReady", message: "ok", lastHeartbeatTime: at },
    {
      type: "MemoryPressure",
      status: memoryPressure,
      reason: memoryPressure === "True" ? "LowMemory" : "SufficientMemory",
      message: "free memory on the machine",
      lastHeartbeatTime: at,
    },
  ],
});

async function setup(t: Test) {
  const server = await createGitServer();
  await server.commit({ "clusters/local.yaml": "kind: Cluster\n" });
  const dataDir = await mkdtemp(join(tmpdir(), "rlark-status-docs-"));
  const store = openSqliteStore({ dataDir });
  const writer = createStatusBranchWriter({
    remote: createGitRepository({ url: server.fileUrl, branch: "main", dataDir }),
    dataDir,
    clock: new FakeClock(),
    documents: createStatusDocuments(store),
  });
  t.teardown(async () => {
    await writer.stop();
    await store.close();
    await server.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  const commits = async () => Number((await server.gitBare("rev-list", "--count", "rlark/status")).trim());
  const file = (path: string) => server.gitBare("show", `rlark/status:${statusBranchPath(path)}`);
  return { store, writer, commits, file };
}

t.test("heartbeats and gauges make no status commit; a phase or condition change does", async (t) => {
  const { store, writer, commits, file } = await setup(t);
  const online = { phase: "Online", agentVersion: "0.1.0", lastTransitionTime: "2026-01-01T00:00:00Z" };
  let c = await store.create(cluster({ ...online, lastHeartbeatTime: "2026-01-01T00:00:00Z" }));
  let n = await store.create(node(nodeStatus("2026-01-01T00:00:00Z", 100, "False")));
  t.equal((await writer.flush()).committed, true, "the first status is committed");
  t.equal(await commits(), 1);
  const clusterFile = await file("status/cluster/local.yaml");
  t.match(clusterFile, /phase: Online/);
  t.notMatch(clusterFile, /lastHeartbeatTime/, "heartbeats are not written to git");
  const nodeFile = await file("status/node/agent-local/vm.yaml");
  t.notMatch(nodeFile, /lastHeartbeatTime|usedBytes|disk:/, "nor are disk figures");
  t.match(nodeFile, /requested:/, "what is reserved by placed work is kept");

  // An idle hub: heartbeats every few seconds, disk figures drifting.
  for (let i = 1; i <= 5; i++) {
    const at = `2026-01-01T00:0${i}:00Z`;
    c = await store.updateStatus({ ...c, status: { ...online, lastHeartbeatTime: at } });
    n = await store.updateStatus({ ...n, status: nodeStatus(at, 100 + i * 4096, "False") });
    const result = await writer.flush();
    t.equal(result.committed, false, `heartbeat ${i} makes no commit`);
  }
  t.equal(await commits(), 1, "no commit while idle");

  c = await store.updateStatus({
    ...c,
    status: { ...online, phase: "Offline", lastTransitionTime: "2026-01-01T00:06:00Z" },
  });
  const offline = await writer.flush();
  t.equal(offline.committed, true, "a phase change commits");
  t.same(offline.changed, ["status/cluster/local.yaml"]);
  t.match(await file("status/cluster/local.yaml"), /phase: Offline/);

  n = await store.updateStatus({ ...n, status: nodeStatus("2026-01-01T00:07:00Z", 999, "True") });
  const pressure = await writer.flush();
  t.equal(pressure.committed, true, "a condition's status change commits");
  t.match(await file("status/node/agent-local/vm.yaml"), /reason: LowMemory/);
  t.equal(await commits(), 3);
});

t.test(
  "the hub's documents render an object again only when it changed, and drop what is gone",
  async (t) => {
    const dataDir = await mkdtemp(join(tmpdir(), "rlark-status-docs-"));
    const store = openSqliteStore({ dataDir });
    t.teardown(async () => {
      await store.close();
      await rm(dataDir, { recursive: true, force: true });
    });
    const c = await store.create(cluster({ phase: "Online" }));
    await store.create(node(nodeStatus("2026-01-01T00:00:00Z", 1, "False")));
    const documents = createStatusDocuments(store);
    const first = await documents();
    t.same(
      first.map((d) => d.path),
      ["status/cluster/local.yaml", "status/node/agent-local/vm.yaml"],
    );
    const again = await documents();
    t.equal(again[0], first[0], "an unchanged object is not rendered again");
    t.equal(again[1], first[1]);
    await store.updateStatus({ ...c, status: { phase: "Offline" } });
    const changed = await documents();
    t.not(changed[0], first[0], "a changed object is rendered again");
    t.match(changed[0]!.content, /phase: Offline/);
    t.equal(changed[1], first[1], "the other is not");
    t.same(changed, await statusDocuments(store), "the same as rendering everything afresh");
    await store.delete("Cluster", undefined, "local");
    t.same(
      (await documents()).map((d) => d.path),
      ["status/node/agent-local/vm.yaml"],
    );
  },
);
