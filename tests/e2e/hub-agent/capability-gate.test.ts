// `rlark status --require` as a release gate, on a real hub with two `rlark agent` processes: a
// process agent ("local") and a docker agent ("edge") on a dockerd of the test's own. The gate
// passes while both serve shell, files and logs; and when the engine, the worker behind the docker agent's sessions and logs, is killed, the
// agent reports them DEGRADED and the gate fails, naming that agent and each capability.
import t from "tap";
import { agentEnrollment, startAgentProcess } from "../../helpers/agent-process.ts";
import { startDockerd } from "../../helpers/dockerd.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { rlark } from "../../helpers/rlark-cli.ts";
import { onRealServers, waitFor } from "../../helpers/wait-for.ts";

const slow = { ...onRealServers, attempts: 1200 };
type Capability = { name: string; process?: string; health?: string; message?: string };

const clusters = {
  "clusters/local.yaml":
    "apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: local\nspec:\n  runtime: process\n",
  "clusters/edge.yaml":
    "apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: edge\nspec:\n  runtime: docker\n",
  // registered, never connected: offline, so not judged
  "clusters/spare.yaml":
    "apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: spare\nspec:\n  runtime: process\n",
};

t.test(
  "the capability gate passes on READY agents and fails, naming them, when a worker is killed",
  async (t) => {
    const engine = await startDockerd(t);
    const { hub } = await startHubOnGit(t, { files: clusters });
    const local = await agentEnrollment(hub, "local");
    const edge = await agentEnrollment(hub, "edge");
    const agents = [
      startAgentProcess(hub, local.stateDir, ["--node-name", "m1"], local.token),
      startAgentProcess(
        hub,
        edge.stateDir,
        ["--runtime", "docker", "--docker-host", engine.host, "--node-name", "robot"],
        edge.token,
      ),
    ];
    t.teardown(() => {
      for (const agent of agents) agent.kill("SIGKILL");
    });
    const capabilities = async (cluster: string) =>
      (
        (await hub.store.get("Cluster", undefined, cluster))?.status as
          | { capabilities?: Capability[] }
          | undefined
      )?.capabilities ?? [];
    const health = async (cluster: string, name: string) =>
      (await capabilities(cluster)).find((c) => c.name === name)?.health;
    for (const cluster of ["local", "edge"])
      await waitFor(
        `${cluster}'s runtime READY`,
        async () =>
          (await health(cluster, `runtime/${cluster === "edge" ? "docker" : "process"}`)) === "READY",
        slow,
      );

    t.match(await capabilities("local"), [
      { name: "runtime/process", process: "RUNNING", health: "READY" },
      { name: "shell", process: "RUNNING", health: "READY" },
      { name: "files", process: "RUNNING", health: "READY" },
      { name: "logs", process: "RUNNING", health: "READY" },
      { name: "network-probe", process: "STOPPED", health: "STOPPED" },
    ]);
    const status = (...args: string[]) =>
      rlark(["status", "--hub", hub.url, "--token", hub.adminToken, ...args]);

    const passing = await status("--require", "shell,logs,runtime");
    t.equal(passing.code, 0, passing.stdout + passing.stderr);
    t.match(
      passing.stdout,
      /Capability gate \(shell, logs, runtime\): passed on 2 online agent\(s\): edge, local/,
    );
    t.match(passing.stdout, /not judged, offline: spare/);

    const files = await status("--require", "shell,files,logs");
    t.equal(files.code, 0, "both serve files too");

    await engine.stop();
    await waitFor(
      "the docker agent reports its shell DEGRADED",
      async () => (await health("edge", "shell")) === "DEGRADED",
      slow,
    );
    const failing = await status("--require", "shell,logs");
    t.equal(failing.code, 1, failing.stdout);
    t.match(failing.stdout, /Capability gate \(shell, logs\): FAILED/);
    t.match(
      failing.stdout,
      /edge: shell is DEGRADED \(the runtime does not answer: the engine does not answer/,
    );
    t.match(failing.stdout, /edge: logs is DEGRADED/);
    t.notMatch(failing.stdout, /local: /, "the healthy agent is not named");
    const json = await status("--require", "shell,logs", "--output", "json");
    t.equal(json.code, 1);
    t.match(JSON.parse(json.stdout).gate, {
      passed: false,
      shortfalls: [
        { cluster: "edge", capability: "shell", health: "DEGRADED" },
        { cluster: "edge", capability: "logs", health: "DEGRADED" },
      ],
    });
    t.match(
      (await rlark(["status", "--hub", hub.url, "--token", hub.adminToken])).stdout,
      /edge +docker +Online +\S+ +\d\/\d READY, .*shell DEGRADED/,
    );

    const bad = await status("--require", "shell,,Files");
    t.equal(bad.code, 2, "a bad list is a usage error");
    t.match(bad.stderr, /--require: "" is not a capability name/);
  },
);
