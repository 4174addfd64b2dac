// The fault matrix's "hub leader × SIGSTOP" (docs/reliability.md), whole hub processes: two hubs
// on the kubernetes store of one real apiserver; the leader is frozen for three times its Lease
// while git changes. The standby takes the Lease once it lapses and applies the change. The old
// leader, resumed, finds it could not renew by its deadline and exits (by design: a supervisor
// starts it again as a standby) without applying anything: the Job committed meanwhile is the
// new leader's, once.
import t from "tap";
import { testNamespace } from "../../helpers/fleet.ts";
import { type HubProcess, hubProcesses, sleepingJob } from "../../helpers/hub-processes.ts";
import { kubeStoreFixture } from "../../helpers/kube-store.ts";
import { onRealServers, waitFor } from "../../helpers/wait-for.ts";

const marker = `rlark-leaderstop-${process.pid}`;
const long = { ...onRealServers, attempts: 2400 };

t.test("a leader frozen past its Lease: the standby leads, the old leader exits when resumed", async (t) => {
  const fixture = await kubeStoreFixture(t);
  const namespace = await testNamespace(t, fixture.kubeConfig, "leaderstop");
  const hubs = await hubProcesses(t, marker, [
    ...["--store", "kubernetes", "--kubeconfig", fixture.kubeconfigFile, "--namespace", namespace],
    ...["--crd-group", fixture.group, "--no-status-commits", "--no-dashboard"],
    ...["--leader-elect-lease-duration", "6s", "--leader-elect-renew-deadline", "4500ms"],
    ...["--leader-elect-retry-period", "500ms"],
  ]);
  const a = await hubs.hub("a");
  const b = await hubs.hub("b");
  const ready = (hub: HubProcess) => hubs.status(hub, "/readyz");
  const job = (hub: HubProcess, name: string) => hubs.api(hub, `/api/v1/rlinf.io/v1alpha1/jobs/${name}`);
  const leader = hubs.start(a);
  await waitFor("hub a leads", async () => (await ready(a)) === 200, long);
  hubs.start(b, ["--ca-dir", `${a.dataDir}/pki`]);
  await waitFor("hub b stands by", async () => (await ready(b)) === 503, long);

  const frozenAt = Date.now();
  leader.kill("SIGSTOP");
  t.teardown(() => leader.kill("SIGCONT"));
  await hubs.git.commit({ "late.yaml": sleepingJob("late", `${marker}-late`) });
  await waitFor("hub b leads", async () => (await ready(b)) === 200, long);
  await waitFor("the new leader applies the new Job", async () => (await job(b, "late")) !== undefined, long);
  const applied = (await job(b, "late")) as { metadata?: { uid?: string; generation?: number } };
  await waitFor("the freeze outlasts the Lease three times", () => Date.now() - frozenAt >= 18_000, {
    attempts: 200,
    everyMs: 100,
  });
  const exited = new Promise<number | null>((resolve) => {
    if (leader.exitCode !== null) resolve(leader.exitCode);
    else leader.once("exit", (code) => resolve(code));
  });
  leader.kill("SIGCONT");
  const code = await exited;
  t.not(code, null, `the old leader exited when resumed (code ${code}): its Lease was lost`);
  t.equal(await ready(b), 200, "b still leads");
  const after = (await job(b, "late")) as { metadata?: { uid?: string; generation?: number } };
  t.equal(after.metadata?.uid, applied.metadata?.uid, "the Job applied by the new leader is the same object");
  t.equal(after.metadata?.generation, applied.metadata?.generation, "its spec as the new leader applied it");
});
