// An agent frozen with SIGSTOP past the hub's heartbeat deadline while git changes: after SIGCONT
// it must converge on what changed meanwhile (a Job deleted: its process stopped; a Job added: its
// process started), on the tunnel it had or a new one. The chaos soak saw a kubernetes-runtime
// agent resumed after 31 s that never created the workload of a Task placed during its freeze nor
// released the Task of a Job deleted then.
import t from "tap";
import { hubProcesses, sleepingJob } from "../../helpers/hub-processes.ts";
import { killMarked, pidsMarked } from "../../helpers/marked-processes.ts";
import { onRealServers, waitFor } from "../../helpers/wait-for.ts";

const marker = `rlark-stopchg-${process.pid}`;
const late = `rlark-stoplate-${process.pid}`;
/** svc's command line, and not the late pod's (whose paths hold `marker`: the agent's state dir). */
const svc = `# ${marker}`;
const long = { ...onRealServers, attempts: 2400 };

t.test("an agent frozen while git changes converges on the changes after SIGCONT", async (t) => {
  const hubs = await hubProcesses(t, marker, ["--no-status-commits", "--no-dashboard"]);
  t.teardown(() => killMarked(late));
  const hub = await hubs.hub("sqlite");
  const api = (route: string) => hubs.api(hub, `/api/v1/rlinf.io/v1alpha1/${route}`);
  hubs.start(hub);
  await waitFor("cluster applied", async () => (await api("clusters/local")) !== undefined, long);
  const agent = await hubs.startAgent(hub, [hub]);
  await waitFor("svc runs", async () => (await pidsMarked(svc)).length > 0, long);

  agent.child.kill("SIGSTOP");
  t.teardown(() => agent.child.kill("SIGCONT"));
  await waitFor(
    "the hub marks the cluster Offline",
    async () => (await api("clusters/local"))?.status?.phase === "Offline",
    long,
  );
  const revision = await hubs.git.commit({ "job.yaml": null, "late.yaml": sleepingJob("late", late) });
  await waitFor(
    "the hub applies the revision during the freeze",
    async () =>
      ((await hubs.api(hub, "/api/v1/source")) as { lastAppliedRevision?: string } | undefined)
        ?.lastAppliedRevision === revision,
    long,
  );
  agent.child.kill("SIGCONT");
  const started = await waitFor(
    "the late Job's process runs",
    async () => (await pidsMarked(late)).length || undefined,
    long,
  );
  await waitFor("svc's process is stopped", async () => (await pidsMarked(svc)).length === 0, long);
  await waitFor(
    "the cluster Online again",
    async () => (await api("clusters/local"))?.status?.phase === "Online",
    long,
  );
  t.equal((await pidsMarked(late)).length, started, "the late Job's process was not started again");
});
