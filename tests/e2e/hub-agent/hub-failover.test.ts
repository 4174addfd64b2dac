// Two hubs on the kubernetes store of one real apiserver: one leads by the Lease, the other
// stands by (serves reads, /readyz 503, no tunnel). kill -9 of the leader: the standby leads,
// the agent (given both addresses) reconnects by itself, and nothing is lost or doubled: no
// object, no Task, no task process, no status commit; a Job committed just before the kill is
// placed by the new leader. The takeover's phases are printed (figures, not assertions).
import t from "tap";
import { statusBranchPath } from "../../../operators/feedback/index.ts";
import { testNamespace } from "../../helpers/fleet.ts";
import { type HubProcess, hubProcesses, sleepingJob } from "../../helpers/hub-processes.ts";
import { kubeStoreFixture } from "../../helpers/kube-store.ts";
import { onRealServers, waitFor } from "../../helpers/wait-for.ts";

const marker = `rlark-failover-${process.pid}`;
const statusBranch = "rlark/status";
const long = { ...onRealServers, attempts: 2400 };

t.test(
  "kill -9 of the leading hub: the standby leads, the agent follows, nothing lost or doubled",
  async (t) => {
    const fixture = await kubeStoreFixture(t);
    const namespace = await testNamespace(t, fixture.kubeConfig, "ha");
    const hubs = await hubProcesses(t, marker, [
      ...["--store", "kubernetes", "--kubeconfig", fixture.kubeconfigFile, "--namespace", namespace],
      ...["--crd-group", fixture.group, "--status-branch", statusBranch, "--no-dashboard"],
    ]);
    const a = await hubs.hub("a");
    const b = await hubs.hub("b");
    const ready = (hub: HubProcess) => hubs.status(hub, "/readyz");
    const jobPhase = async (hub: HubProcess, job: string) =>
      (await hubs.api(hub, `/api/v1/rlinf.io/v1alpha1/jobs/${job}`))?.status?.phase;
    const clusterStatus = async (hub: HubProcess) =>
      (await hubs.api(hub, "/api/v1/rlinf.io/v1alpha1/clusters/local"))?.status;
    const taskCount = async (hub: HubProcess) =>
      (await hubs.api(hub, "/api/v1/rlinf.io/v1alpha1/tasks"))?.items?.length;
    const statusFile = (job: string) =>
      hubs.git
        .gitBare("show", `${statusBranch}:${statusBranchPath(`status/job/${job}.yaml`)}`)
        .catch(() => "");

    hubs.start(a);
    await waitFor("hub a leads", async () => (await ready(a)) === 200, { ...onRealServers, attempts: 1200 });
    // b shares a's CA (as replicas share a mounted Secret), so agents trust either.
    hubs.start(b, ["--ca-dir", `${a.dataDir}/pki`]);
    await waitFor("hub b serves, as a standby", async () => (await ready(b)) === 503, {
      ...onRealServers,
      attempts: 1200,
    });
    t.ok(await hubs.api(b, "/api/v1/rlinf.io/v1alpha1/clusters/local"), "the standby serves the read API");

    await hubs.startAgent(a, [a, b]);
    await waitFor("the job Running", async () => (await jobPhase(a, "svc")) === "Running", long);
    const processes = await hubs.taskProcesses();
    t.ok(processes > 0, "the task runs");
    const tasksBefore = await taskCount(b);
    t.ok(tasksBefore, "the standby sees the leader's Tasks");
    t.ok((await clusterStatus(b))?.bootId, "the agent had said hello to hub a");
    await waitFor(
      "hub a commits the Job's status",
      async () => /Running/.test(await statusFile("svc")),
      long,
    );
    const statusTipBefore = (await hubs.git.gitBare("rev-parse", statusBranch)).trim();

    // A Job that reaches git as the leader dies: whether a applied it or not, b must place it once.
    await hubs.git.commit({ "late.yaml": sleepingJob("late", marker) });
    a.child!.kill("SIGKILL");
    const killedAt = Date.now();
    await waitFor("hub b ready, leading", async () => (await ready(b)) === 200, long);
    const readyAt = Date.now();
    await waitFor(
      "the agent back on hub b and both Jobs Running",
      async () => {
        const status = await clusterStatus(b);
        return (
          hubs.loggedAt(b, '"message":"agent connected"', killedAt) !== undefined &&
          status?.phase === "Online" &&
          (await jobPhase(b, "svc")) === "Running" &&
          (await jobPhase(b, "late")) === "Running"
        );
      },
      long,
    );
    const runningAt = Date.now();
    const agentAt = hubs.loggedAt(b, '"message":"agent connected"', killedAt);
    const leadAt = hubs.loggedAt(b, '"message":"leading"', killedAt);
    const startedAt = hubs.loggedAt(b, '"message":"hub started"', killedAt);
    const s = (at: number | undefined) =>
      at === undefined ? "?" : `${((at - killedAt) / 1000).toFixed(1)} s`;
    t.comment(
      `takeover after kill -9: hub b took the Lease ${s(leadAt)}, started leading ${s(startedAt)}, ` +
        `ready ${s(readyAt)}, the agent connected to it ${s(agentAt)}, both Jobs Running ${s(runningAt)} ` +
        "after the kill",
    );

    t.equal(await hubs.taskProcesses(), processes * 2, "one process per Job: none started twice");
    t.equal(await taskCount(b), tasksBefore! * 2, "no Task doubled or lost");
    t.ok(await hubs.api(b, "/api/v1/rlinf.io/v1alpha1/jobs/svc"), "no object lost");
    await waitFor(
      "hub b commits the late Job's status",
      async () => /Running/.test(await statusFile("late")),
      long,
    );
    t.match(await statusFile("svc"), /Running/, "the status committed by hub a is still there");
    const history = (await hubs.git.gitBare("rev-list", statusBranch)).trim().split("\n");
    t.ok(history.includes(statusTipBefore), "no status commit lost: hub b built on hub a's");
    for (const commit of history) {
      const parents = (await hubs.git.gitBare("rev-list", "--parents", "-n1", commit)).trim().split(" ");
      if (parents.length < 2) continue; // the root commit
      const changed = (await hubs.git.gitBare("diff", "--name-only", parents[1]!, commit)).trim();
      t.not(changed, "", `status commit ${commit.slice(0, 8)} changes something (no doubled commit)`);
    }
  },
);
