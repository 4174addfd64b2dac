// The fault matrix's "hub standby × SIGSTOP" (docs/reliability.md): two hubs on the kubernetes
// store of one real apiserver; the standby is frozen for longer than the Lease while git changes.
// Nothing visible: the leader goes on leading and applies the change; the standby, resumed, does
// not take the Lease, stays a standby (/readyz 503) and its read API catches up with the change
// (its store cache's watch resumed or relisted).
import t from "tap";
import { testNamespace } from "../../helpers/fleet.ts";
import { type HubProcess, hubProcesses, sleepingJob } from "../../helpers/hub-processes.ts";
import { kubeStoreFixture } from "../../helpers/kube-store.ts";
import { onRealServers, waitFor } from "../../helpers/wait-for.ts";

const marker = `rlark-standbystop-${process.pid}`;
const long = { ...onRealServers, attempts: 2400 };

t.test("a standby frozen past the Lease: the leader goes on, the standby catches up", async (t) => {
  const fixture = await kubeStoreFixture(t);
  const namespace = await testNamespace(t, fixture.kubeConfig, "standbystop");
  // A 6 s Lease: the freeze below outlasts it three times. The renew deadline (4.5 s) leaves each
  // Lease request 1.5 s (a third of it), which the leader's renewals need on a loaded machine.
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
  hubs.start(a);
  await waitFor("hub a leads", async () => (await ready(a)) === 200, long);
  const standby = hubs.start(b, ["--ca-dir", `${a.dataDir}/pki`]);
  await waitFor("hub b stands by", async () => (await ready(b)) === 503, long);
  await waitFor("the standby serves Job svc", async () => (await job(b, "svc")) !== undefined, long);

  const frozenAt = Date.now();
  standby.kill("SIGSTOP");
  t.teardown(() => standby.kill("SIGCONT"));
  await hubs.git.commit({ "late.yaml": sleepingJob("late", `${marker}-late`) });
  await waitFor("the leader applies the new Job", async () => (await job(a, "late")) !== undefined, long);
  await waitFor("the freeze outlasts the Lease three times", () => Date.now() - frozenAt >= 18_000, {
    attempts: 200,
    everyMs: 100,
  });
  standby.kill("SIGCONT");

  await waitFor(
    "the standby's read API has the new Job",
    async () => (await job(b, "late")) !== undefined,
    long,
  );
  t.equal(await ready(b), 503, "b still stands by");
  t.equal(await ready(a), 200, "a still leads");
  t.equal(standby.exitCode, null, "the standby did not exit");
  t.equal(a.child?.exitCode, null, "the leader did not exit");
});
