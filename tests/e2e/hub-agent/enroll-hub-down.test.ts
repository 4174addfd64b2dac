// An agent that starts enrolling while its hub is killed (kill -9, restarted later by its
// supervisor) keeps trying with the same token and key and enrolls once the hub is back: no new
// token, no restart of the agent. (An enrollment whose answer a hub kill cut off after the hub had
// issued the certificate: tests/agent/enroll-retry.test.ts.)
import t from "tap";
import { hubProcesses } from "../../helpers/hub-processes.ts";
import { onRealServers, waitFor } from "../../helpers/wait-for.ts";

const marker = `rlark-enrolldown-${process.pid}`;
const long = { ...onRealServers, attempts: 2400 };

t.test("an agent enrolling while its hub is down enrolls once the hub is back", async (t) => {
  const hubs = await hubProcesses(t, marker, ["--no-status-commits", "--no-dashboard"]);
  await hubs.git.commit({ "job.yaml": null });
  const hub = await hubs.hub("sqlite");
  const api = (route: string) => hubs.api(hub, `/api/v1/rlinf.io/v1alpha1/${route}`);
  const child = hubs.start(hub);
  await waitFor("cluster applied", async () => (await api("clusters/local")) !== undefined, long);
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;

  // The token comes from the data dir of the hub that is down, as an operator's would.
  const agent = await hubs.startAgent(hub, [hub]);
  const agentLines: string[] = [];
  agent.child.stdout?.on("data", (chunk: Buffer) => agentLines.push(chunk.toString()));
  agent.child.stderr?.on("data", (chunk: Buffer) => agentLines.push(chunk.toString()));
  await waitFor(
    "the agent retries the enrollment the dead hub refused",
    () => agentLines.join("").includes("enrollment cut short; trying again with the same key"),
    long,
  );
  t.equal(agent.child.exitCode, null, "the agent did not give up");

  hubs.start(hub);
  await waitFor(
    "the agent enrolled and the cluster Online",
    async () => (await api("clusters/local"))?.status?.phase === "Online",
    long,
  );
  t.equal(agent.child.exitCode, null, "the same agent process");
});
