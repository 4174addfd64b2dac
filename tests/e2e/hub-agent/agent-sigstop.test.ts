// The fault matrix's {agent, SIGSTOP past the leases} cell (docs/reliability.md): an agent frozen
// with SIGSTOP for longer than the hub's heartbeat deadline is marked Offline by the hub, which
// keeps the Job Running (its Task is running, so nothing is moved) and the agent's tasks keep
// running on their own; after SIGCONT the same agent process comes back Online by itself, and no
// task process was started twice.
import { readdir, readFile } from "node:fs/promises";
import t from "tap";
import { hubProcesses } from "../../helpers/hub-processes.ts";
import { onRealServers, waitFor } from "../../helpers/wait-for.ts";

const marker = `rlark-agentstop-${process.pid}`;

/** The pid of the `rlark agent` process this file started (its state dir holds the marker). */
async function agentPid(): Promise<number | undefined> {
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const argv = (await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "")).split("\0");
    if (argv.includes("agent") && argv.some((a) => a.includes(`${marker}-agent-`))) return Number(entry);
  }
  return undefined;
}

t.test(
  "an agent frozen past the heartbeat deadline goes Offline and comes back without duplicates",
  async (t) => {
    const hubs = await hubProcesses(t, marker, ["--no-status-commits", "--no-dashboard"]);
    const hub = await hubs.hub("sqlite");
    const clusterStatus = async () =>
      (await hubs.api(hub, "/api/v1/rlinf.io/v1alpha1/clusters/local"))?.status;
    const jobPhase = async () => (await hubs.api(hub, "/api/v1/rlinf.io/v1alpha1/jobs/svc"))?.status?.phase;

    hubs.start(hub);
    const cluster = () => hubs.api(hub, "/api/v1/rlinf.io/v1alpha1/clusters/local");
    await waitFor("cluster applied", async () => (await cluster()) !== undefined, {
      ...onRealServers,
      attempts: 1200,
    });
    await hubs.startAgent(hub, [hub]);
    await waitFor("job Running", async () => (await jobPhase()) === "Running", {
      ...onRealServers,
      attempts: 2400,
    });
    const running = await hubs.taskProcesses();
    t.ok(running > 0, "the task runs");
    const bootBefore = (await clusterStatus())?.bootId;
    const pid = await agentPid();
    if (pid === undefined) throw new Error("the agent process was not found");

    process.kill(pid, "SIGSTOP");
    t.teardown(() => {
      try {
        process.kill(pid, "SIGCONT");
      } catch {
        // already gone
      }
    });
    await waitFor(
      "the hub marks the cluster Offline",
      async () => (await clusterStatus())?.phase === "Offline",
      {
        ...onRealServers,
        attempts: 2400,
      },
    );
    t.equal(await jobPhase(), "Running", "the Job stays Running while its agent is silent");
    t.equal(await hubs.taskProcesses(), running, "the agent's task processes run on without it");

    process.kill(pid, "SIGCONT");
    await waitFor(
      "the agent back Online",
      async () => (await clusterStatus())?.phase === "Online" && (await jobPhase()) === "Running",
      { ...onRealServers, attempts: 2400 },
    );
    t.equal(await agentPid(), pid, "the same agent process reconnected (no restart was needed)");
    t.equal((await clusterStatus())?.bootId, bootBefore, "it said hello with the same boot id");
    t.equal(await hubs.taskProcesses(), running, "no task process was started twice");
  },
);
