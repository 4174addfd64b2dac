// Quota on a real hub on git with a real process agent: a Job that does not fit its team's
// quota waits with QuotaReserved=False saying what it lacks, and is admitted when quota comes
// back; a team that wants its nominal quota back preempts the newest borrowing Job of another
// team through Stopping (its process ends, its status says why), and that Job queues again.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { ProcessRuntime } from "../../../operators/agent/runtimes/process/index.ts";
import type { Job } from "../../../operators/api/index.ts";
import { startAgentOnHub } from "../../helpers/agent-on-hub.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { rlark } from "../../helpers/rlark-cli.ts";
import { onProcesses, onRealServers, waitFor } from "../../helpers/wait-for.ts";

const cluster = `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata:
  name: local
spec:
  runtime: process
`;

const users = ["alice", "bob"]
  .map(
    (name) =>
      `apiVersion: rlinf.io/v1alpha1\nkind: User\nmetadata:\n  name: ${name}\nspec:\n  roles: [user]\n`,
  )
  .join("---\n");

// Raw processes declare no cpu or memory, so a quota on pods (one per replica) limits them.
const team = (name: string, member: string) => `apiVersion: rlinf.io/v1alpha1
kind: Team
metadata:
  name: ${name}
spec:
  members: [${member}]
  cohort: lab
  quota:
    - resource: pods
      nominal: "1"
`;

const marker = `rlark-quota-${process.pid}`;
const job = (name: string, teamName: string, stopped = false) => `apiVersion: rlinf.io/v1alpha1
kind: Job
metadata:
  name: ${name}
spec:
  team: ${teamName}
${stopped ? "  stopped: true\n" : ""}  tasks:
    - name: main
      role: Env
      agentType: Raw
      raw:
        kind: Deployment
        command: ["sh", "-c", "exec sleep 600 # ${marker}-${name}"]
`;

t.test("quota waits, admits, and takes borrowed quota back through Stopping", async (t) => {
  const { hub, git } = await startHubOnGit(t, {
    intervalMs: 100,
    files: {
      "clusters/local.yaml": cluster,
      "users.yaml": users,
      "teams/vision.yaml": team("vision", "alice"),
      "teams/robots.yaml": team("robots", "bob"),
      "jobs/v1.yaml": job("v1", "vision"),
    },
  });
  await waitFor("Cluster local applied", () => hub.store.get("Cluster", undefined, "local"), onRealServers);
  const stateDir = await mkdtemp(path.join(tmpdir(), "rlark-quota-"));
  const runtime = await ProcessRuntime.open({ stateDir });
  t.teardown(async () => {
    await runtime.stop({ terminatePods: true });
    await rm(stateDir, { recursive: true, force: true });
  });
  await startAgentOnHub(t, hub, "local", { runtime, runtimeKind: "process" });

  const get = (name: string) => hub.store.get<Job>("Job", undefined, name);
  const condition = async (name: string, type: string) =>
    (await get(name))?.status?.conditions?.find((c) => c.type === type);
  const running = async (name: string) => (await get(name))?.status?.phase === "Running";
  const sleeping = async (name: string) => {
    const { readdir, readFile } = await import("node:fs/promises");
    let found = 0;
    for (const entry of await readdir("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      const cmdline = await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "");
      if (cmdline.includes(`${marker}-${name}`) && !cmdline.startsWith("sh")) found++;
    }
    return found;
  };

  await waitFor("v1 Running within vision's nominal quota", () => running("v1"), onRealServers);
  t.equal((await condition("v1", "QuotaReserved"))?.status, "True");

  // v2 borrows robots' idle pod; v3 finds the cohort full.
  await git.commit({ "jobs/v2.yaml": job("v2", "vision"), "jobs/v3.yaml": job("v3", "vision") });
  await waitFor("v2 Running on borrowed quota", () => running("v2"), onRealServers);
  t.match((await condition("v2", "QuotaReserved"))?.message, /borrowing from cohort lab/);
  const waiting = await waitFor(
    "v3 waiting for quota",
    () => condition("v3", "QuotaReserved"),
    onRealServers,
  );
  t.equal(waiting.status, "False");
  t.equal(waiting.reason, "QuotaExceeded");
  t.equal(waiting.message, "team vision needs 1 pods, 0 free");
  t.equal((await get("v3"))?.status?.phase, "Pending", "no Task was placed for it");
  t.same(
    (await hub.store.list("Task", { labelSelector: "rlinf.io/job=v3" })).items,
    [],
    "placement never saw it",
  );
  const status = await rlark(["status", "--hub", hub.url, "--token", hub.adminToken]);
  t.equal(status.code, 0, status.stderr);
  t.match(
    status.stdout.split("\n").find((line) => line.startsWith("v3 ")),
    /^v3 +Pending +1 +1 +vision +team vision needs 1 pods, 0 free$/,
    "rlark status says why it waits",
  );
  const api = await fetch(`${hub.url}/api/v1/rlinf.io/v1alpha1/jobs/v3`, {
    headers: { authorization: `Bearer ${hub.adminToken}` },
  });
  const served = (await api.json()) as Job;
  t.match(
    served.status?.conditions?.find((c) => c.type === "QuotaReserved"),
    { status: "False", reason: "QuotaExceeded", message: "team vision needs 1 pods, 0 free" },
    "and so does the API",
  );

  // robots wants its nominal pod back: v2 (vision's borrower) stops through Stopping.
  await git.commit({ "jobs/r1.yaml": job("r1", "robots") });
  await waitFor("r1 Running on its nominal quota", () => running("r1"), onRealServers);
  await waitFor("v2's process ended", async () => (await sleeping("v2")) === 0, onProcesses);
  const v2 = await waitFor(
    "v2 queued again after its preemption",
    async () => {
      const found = await get("v2");
      return found?.status?.run === 2 && found.status.conditions?.some((c) => c.type === "QuotaReserved")
        ? found
        : undefined;
    },
    onRealServers,
  );
  const reasons = (v2.status?.events ?? []).map((e) => e.reason);
  t.ok(reasons.includes("Evicted"), "the Job says it was preempted");
  t.ok(reasons.includes("Preempted"), "it went through Stopping");
  t.equal(
    v2.status?.history?.[0]?.phase,
    "Stopped",
    "its first run ended Stopped, not killed without status",
  );
  const requeued = v2.status?.conditions?.find((c) => c.type === "QuotaReserved");
  t.equal(requeued?.status, "False");
  t.equal((await condition("v1", "QuotaReserved"))?.status, "True", "v1, within nominal, was left alone");
  t.ok(await running("v1"));
  t.equal(await sleeping("v1"), 1);

  // v1 stops: its quota goes to one of the vision Jobs waiting.
  await git.commit({ "jobs/v1.yaml": job("v1", "vision", true) });
  await waitFor(
    "a waiting vision Job admitted and Running",
    async () => (await running("v2")) || (await running("v3")),
    onRealServers,
  );
  t.equal((await get("v1"))?.status?.phase, "Stopped");
});
