// Hub and a process-runtime agent end to end: a git repository, the real hub (store, controllers,
// SSH tunnel) and `rlark agent` as its own process, enrolled with a bootstrap token.
import t, { type Test } from "tap";
import type { Hub } from "../../../operators/hub/hub.ts";
import type { KubeObject } from "../../../operators/lib/store/index.ts";
import { agentEnrollment, startAgentProcess } from "../../helpers/agent-process.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { pidsMarked } from "../../helpers/marked-processes.ts";
import { onRealServers, waitFor } from "../../helpers/wait-for.ts";

const marker = `rlark-e2e-${process.pid}`;

const cluster = `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata:
  name: local
spec:
  runtime: process
`;

function rawJob(name: string, script: string, kind: "Job" | "Deployment", extra = ""): string {
  return `apiVersion: rlinf.io/v1alpha1
kind: Job
metadata:
  name: ${name}
spec:
${extra}  tasks:
    - name: main
      role: Actor
      agentType: Raw
      raw:
        kind: ${kind}
        command: ["sh", "-c", ${JSON.stringify(`${script} # ${marker}`)}]
`;
}

/** Processes of this test run still alive, found by the marker in their command line. */
const markedProcesses = () => pidsMarked(marker);

async function job(hub: Hub, name: string): Promise<KubeObject | undefined> {
  return hub.store.get("Job", undefined, name);
}
type ClusterStatus = { bootId?: string; capabilities?: { name: string; process: string }[] };

async function clusterStatus(hub: Hub): Promise<ClusterStatus> {
  return ((await hub.store.get("Cluster", undefined, "local"))?.status as ClusterStatus | undefined) ?? {};
}
const phaseOf = (o: KubeObject | undefined) => (o?.status as { phase?: string } | undefined)?.phase;

async function setup(t: Test, files: Record<string, string>) {
  const running = await startHubOnGit(t, { files: { "cluster.yaml": cluster, ...files } });
  const { hub } = running;
  const { token, stateDir } = await agentEnrollment(hub, "local");
  return { running, hub, stateDir, token };
}

t.test("Raw tasks run to completion: exit 0 succeeds, exit 3 fails with exit code 3", async (t) => {
  const { hub, stateDir, token } = await setup(t, {
    "ok.yaml": rawJob("ok", "echo hello-from-the-task; exit 0", "Job"),
    "bad.yaml": rawJob("bad", "exit 3", "Job"),
  });
  const agent = startAgentProcess(hub, stateDir, [], token);
  t.teardown(() => agent.kill("SIGKILL"));
  await waitFor("ok Succeeded", async () => phaseOf(await job(hub, "ok")) === "Succeeded", {
    ...onRealServers,
    attempts: 1200,
  });
  await waitFor("bad Failed", async () => phaseOf(await job(hub, "bad")) === "Failed", {
    ...onRealServers,
    attempts: 1200,
  });
  const task = await hub.store.get("Task", "agent-local", "bad-main");
  t.match(task?.status, { phase: "Failed", exitCode: 3 });
  const conditions = (await job(hub, "bad"))?.status as { conditions?: { message?: string }[] };
  t.match(JSON.stringify(conditions.conditions), /exit code 3/, "the Job says why");
  const cl = await hub.store.get("Cluster", undefined, "local");
  t.match(cl?.status, { phase: "Online", runtime: "process" });
  const pods = await hub.store.list("Pod", { namespace: "agent-local" });
  const okPod = pods.items.find((p) => p.metadata.name.startsWith("ok-main"));
  t.ok(okPod, "pods are mirrored");

  // The pod's output comes from the agent through its tunnel, behind the API's token.
  const logUrl = `${hub.url}/api/v1/rlinf.io/v1alpha1/pods/${okPod?.metadata.name}/log?namespace=agent-local&tail=10`;
  const log = await fetch(logUrl, { headers: { authorization: `Bearer ${hub.adminToken}` } });
  t.equal(log.status, 200);
  t.match(await log.text(), /hello-from-the-task/);
  t.equal((await fetch(logUrl)).status, 401, "logs need the token too");
  const missing = await fetch(`${hub.url}/api/v1/rlinf.io/v1alpha1/pods/nope/log?namespace=agent-local`, {
    headers: { authorization: `Bearer ${hub.adminToken}` },
  });
  t.equal(missing.status, 404);
});

t.test(
  "stop leaves nothing running; clearing stopped starts a fresh run; agent and hub restarts duplicate nothing",
  async (t) => {
    const { running, stateDir, token } = await setup(t, {
      "svc.yaml": rawJob("svc", "sleep 300; true", "Deployment"),
    });
    const { git } = running;
    let hub = running.hub;
    let agent = startAgentProcess(hub, stateDir, [], token);
    t.teardown(() => agent.kill("SIGKILL"));
    await waitFor("svc Running", async () => phaseOf(await job(hub, "svc")) === "Running", {
      ...onRealServers,
      attempts: 1200,
    });
    // The runtime's wrapper shell and the task's shell both carry the marker: count once, compare after.
    const perReplica = (await markedProcesses()).length;
    t.ok(perReplica > 0, "the replica runs");

    // The agent dies hard and comes back: it adopts the process instead of starting a second one.
    const killed = (await clusterStatus(hub)).bootId;
    agent.kill("SIGKILL");
    await new Promise((resolve) => agent.once("exit", resolve));
    agent = startAgentProcess(hub, stateDir, []);
    // The restarted agent has applied the hub's desired set (its runtime RUNNING) and reported the
    // replica Running: one it had not adopted would have been started, so the count below is final.
    await waitFor(
      "the restarted agent reports the replica Running",
      async () => {
        const status = await clusterStatus(hub);
        const runtime = status.capabilities?.find((c) => c.name === "runtime/process");
        if (status.bootId === killed || runtime?.process !== "RUNNING") return false;
        const pods = (await hub.store.list("Pod", { namespace: "agent-local" })).items;
        const svc = pods.filter((p) => p.metadata.name.startsWith("svc-"));
        return svc.length > 0 && svc.every((p) => (p.status as { phase?: string })?.phase === "Running");
      },
      onRealServers,
    );
    t.equal((await markedProcesses()).length, perReplica, "no duplicate after an agent restart");

    // The hub restarts on the same data dir: the agent reconnects and the Job stays Running.
    hub = await running.restart({ ssh: hub.sshAddress });
    await waitFor(
      "status",
      async () => (await hub.store.get("Cluster", undefined, "local"))?.status !== undefined,
      onRealServers,
    );
    await waitFor(
      "agent reconnected to the restarted hub",
      async () =>
        ((await hub.store.get("Cluster", undefined, "local"))?.status as { phase?: string })?.phase ===
        "Online",
      { ...onRealServers, attempts: 1200 },
    );
    t.equal((await markedProcesses()).length, perReplica, "no duplicate after a hub restart");

    await git.commit({ "svc.yaml": rawJob("svc", "sleep 300; true", "Deployment", "  stopped: true\n") });
    await waitFor("svc Stopped", async () => phaseOf(await job(hub, "svc")) === "Stopped", {
      ...onRealServers,
      attempts: 1200,
    });
    t.same(await markedProcesses(), [], "nothing is left running");
    t.same((await hub.store.list("Task", { namespace: "agent-local" })).items, [], "no Task is left");

    await git.commit({ "svc.yaml": rawJob("svc", "sleep 300; true", "Deployment") });
    await waitFor("svc Running again", async () => phaseOf(await job(hub, "svc")) === "Running", {
      ...onRealServers,
      attempts: 1200,
    });
    t.equal(((await job(hub, "svc"))?.status as { run?: number } | undefined)?.run, 2, "a fresh run");
    t.equal((await markedProcesses()).length, perReplica, "one replica again");
    await git.commit({ "svc.yaml": null });
    await waitFor(
      "svc removed from git is stopped, then gone",
      async () => (await job(hub, "svc")) === undefined,
      {
        ...onRealServers,
        attempts: 1200,
      },
    );
    t.same(await markedProcesses(), []);
  },
);
