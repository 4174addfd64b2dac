// The hub killed with SIGKILL while an agent runs a task: restarted on the same data dir and
// address, it gets the agent back (the agent reconnects by itself), keeps the Job Running and
// starts nothing twice.
import t from "tap";
import { hubProcesses } from "../../helpers/hub-processes.ts";
import { onRealServers, waitFor } from "../../helpers/wait-for.ts";

const marker = `rlark-hubkill-${process.pid}`;

t.test("a hub killed with SIGKILL and restarted gets its agent back without duplicates", async (t) => {
  const hubs = await hubProcesses(t, marker, ["--no-status-commits", "--no-dashboard"]);
  const hub = await hubs.hub("sqlite");
  const clusterStatus = async () => (await hubs.api(hub, "/api/v1/rlinf.io/v1alpha1/clusters/local"))?.status;
  const jobPhase = async () => (await hubs.api(hub, "/api/v1/rlinf.io/v1alpha1/jobs/svc"))?.status?.phase;

  hubs.start(hub);
  await waitFor(
    "cluster applied",
    async () => (await hubs.api(hub, "/api/v1/rlinf.io/v1alpha1/clusters/local")) !== undefined,
    {
      ...onRealServers,
      attempts: 1200,
    },
  );
  await hubs.startAgent(hub, [hub]);
  await waitFor("job Running", async () => (await jobPhase()) === "Running", {
    ...onRealServers,
    attempts: 2400,
  });
  const perReplica = await hubs.taskProcesses();
  t.ok(perReplica > 0, "the task runs");

  const killed = hub.child!;
  killed.kill("SIGKILL");
  await new Promise((resolve) => killed.once("exit", resolve));
  await waitFor("hub gone", async () => (await hubs.status(hub, "/healthz")) === undefined, onRealServers);
  hubs.start(hub);
  await waitFor(
    "agent back",
    async () => (await clusterStatus())?.phase === "Online" && (await jobPhase()) === "Running",
    {
      ...onRealServers,
      attempts: 2400,
    },
  );
  t.equal(await hubs.taskProcesses(), perReplica, "the agent kept its process and started no second one");
  const bootAfter = (await clusterStatus())?.bootId;
  t.ok(bootAfter, "the reconnected agent said hello to the new hub");
});
