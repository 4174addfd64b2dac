// `rlark agent --pingmesh FILE` as its own process on a real hub: the machine probes the peers of
// its static config by TCP connect and its reports carry the figures to the Cluster's
// status.pingMesh, with its topology from the config over its labels. The peer is a second
// PingMesh of the same module in this process, on 127.0.0.1 (its probe port). A bad config stops
// the agent with an error naming the file and the field.
import { execFile } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import t from "tap";
import type { Cluster } from "../../operators/api/index.ts";
import { startAgentPingMesh } from "../../operators/cli/agent-pingmesh.ts";
import { systemClock } from "../../operators/lib/clock.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import { agentEnrollment, startAgentProcess } from "../helpers/agent-process.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { clusterYaml } from "../helpers/job-yaml.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const execFileAsync = promisify(execFile);
const cli = path.resolve(import.meta.dirname, "../../operators/cli/main.ts");

t.test("the agent's PingMesh reaches the Cluster's status", async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), "rlark-pingmesh-agent-"));
  const peerConfig = path.join(dir, "peer.json");
  await writeFile(peerConfig, JSON.stringify({ listen: "127.0.0.1:0", peers: [] }));
  const peer = await startAgentPingMesh({
    file: peerConfig,
    nodeName: "peer-node",
    nodeLabels: {},
    clock: systemClock,
    logger: silentLogger,
  });
  t.teardown(() => peer.stop());
  const [, port] = (peer.address as string).split(":");

  const { hub } = await startHubOnGit(t, { files: { "clusters.yaml": clusterYaml("edge") } });
  const { token, stateDir } = await agentEnrollment(hub, "edge");
  const config = path.join(dir, "mesh.json");
  await writeFile(
    config,
    JSON.stringify({
      topology: { rack: "r4" },
      intervalMs: 200,
      peers: [{ name: "peer-node", host: "127.0.0.1", port: Number(port), topology: { rack: "r5" } }],
    }),
  );
  const agent = startAgentProcess(
    hub,
    stateDir,
    ["--node-name", "edge-node", "--label", "topology.kubernetes.io/zone=z1", "--pingmesh", config],
    token,
  );
  t.teardown(() => agent.kill());
  const mesh = await waitFor(
    "edge's PingMesh figures",
    async () => {
      const c = await hub.store.get<Cluster>("Cluster", undefined, "edge");
      const pair = c?.status?.pingMesh?.nodePairs?.[0];
      return pair && pair.figures.samples >= 3 ? c?.status?.pingMesh : undefined;
    },
    onRealServers,
  );
  const pair = mesh.nodePairs?.[0];
  t.equal(pair?.source, "edge-node");
  t.equal(pair?.target, "peer-node");
  t.equal(pair?.figures.loss, 0, "every connect to the peer's probe port answered");
  t.ok((pair?.figures.p50Ms ?? -1) >= 0, "with an RTT");
  const edge = mesh.nodes?.find((n) => n.name === "edge-node");
  t.match(edge?.topology, { rack: "r4", zone: "z1" }, "the config's rack over the labels' zone");
  t.same(
    mesh.nodes?.find((n) => n.name === "peer-node")?.topology,
    { rack: "r5" },
    "the peer as configured, no more",
  );
});

t.test("a bad PingMesh config stops the agent, naming the file and field", async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), "rlark-pingmesh-bad-"));
  const config = path.join(dir, "mesh.json");
  await writeFile(config, JSON.stringify({ peers: [{ name: "a", host: "127.0.0.1", port: 70000 }] }));
  const failed = await execFileAsync(
    process.execPath,
    [cli, "agent", "--hub", "127.0.0.1:1", "--state-dir", path.join(dir, "state"), "--pingmesh", config],
    { encoding: "utf8", timeout: 60_000 },
  ).then(
    () => undefined,
    (error: { code?: number; stderr?: string }) => error,
  );
  t.ok(failed && failed.code !== 0, "the agent exits non-zero");
  t.match(failed?.stderr, /mesh\.json: peers\[0\]: port must be 1\.\.65535/);
});
