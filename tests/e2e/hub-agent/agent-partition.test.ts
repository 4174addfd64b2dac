// The fault matrix's "agent × partition" (docs/reliability.md): an agent whose path to the hub goes
// silent (a proxy that drops bytes both ways and answers no new connection: no FIN, no RST, as a
// cut link looks; not a netns) while git changes. The hub marks the cluster Offline; the agent's
// Tasks run on; once the path is back the agent connects again and converges on what changed
// meanwhile (a Job deleted: its process stopped; a Job added: its process started once).
import t from "tap";
import { hubProcesses, sleepingJob } from "../../helpers/hub-processes.ts";
import { killMarked, pidsMarked } from "../../helpers/marked-processes.ts";
import { resettableProxy } from "../../helpers/store-through-proxy.ts";
import { onRealServers, waitFor } from "../../helpers/wait-for.ts";

const marker = `rlark-agentcut-${process.pid}`;
const late = `rlark-cutlate-${process.pid}`;
/** svc's command line, and not the late pod's (whose paths hold `marker`: the agent's state dir). */
const svc = `# ${marker}`;
const long = { ...onRealServers, attempts: 2400 };

t.test(
  "an agent cut from the hub: Offline, its Tasks run on, it converges once the path is back",
  async (t) => {
    const hubs = await hubProcesses(t, marker, ["--no-status-commits", "--no-dashboard"]);
    t.teardown(() => killMarked(late));
    const hub = await hubs.hub("sqlite");
    const api = (route: string) => hubs.api(hub, `/api/v1/rlinf.io/v1alpha1/${route}`);
    hubs.start(hub);
    await waitFor("cluster applied", async () => (await api("clusters/local")) !== undefined, long);
    const path = await resettableProxy("127.0.0.1", hub.ssh);
    t.teardown(() => {
      void path.close();
      path.reset();
    });
    await hubs.startAgent(hub, [hub], { hubAddresses: [`127.0.0.1:${path.port}`] });
    await waitFor("svc runs", async () => (await pidsMarked(svc)).length > 0, long);
    const svcPids = await pidsMarked(svc);

    path.freeze();
    await waitFor(
      "the hub marks the cluster Offline",
      async () => (await api("clusters/local"))?.status?.phase === "Offline",
      long,
    );
    t.same(await pidsMarked(svc), svcPids, "svc runs on while its agent is cut off");
    const revision = await hubs.git.commit({ "job.yaml": null, "late.yaml": sleepingJob("late", late) });
    await waitFor(
      "the hub applies the revision during the cut",
      async () =>
        ((await hubs.api(hub, "/api/v1/source")) as { lastAppliedRevision?: string } | undefined)
          ?.lastAppliedRevision === revision,
      long,
    );
    t.same(await pidsMarked(late), [], "nothing of the late Job runs while the agent is cut off");
    path.thaw();
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
  },
);
