// Leader election on a real Lease of the fleet's kube-apiserver (operators/lib/leader-election.ts):
// one candidate leads at a time, a leader that fails to start gives the lead up rather than
// holding the Lease while doing nothing, a slow start does not stop the renewals, a leader whose
// apiserver stops answering stops leading by its renew deadline, and one that lost the lead never
// leads again (another candidate takes over once the apiserver answers).
import t, { type Test } from "tap";
import { LeaderElection } from "../../operators/lib/leader-election.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import { fleetCluster, testNamespace } from "../helpers/fleet.ts";
import { apiserverProxy, kubeConfigThrough } from "../helpers/store-through-proxy.ts";
import { onKube, waitFor } from "../helpers/wait-for.ts";

const { kubeConfig } = fleetCluster(0);
// Short, but each Lease request still gets 1.5 s (a third of the renew deadline) on a busy machine.
const quick = { leaseMs: 6_000, renewDeadlineMs: 4_500, retryMs: 500 };

t.test("a leader whose start fails stops leading, and another candidate takes the Lease", async (t) => {
  const namespace = await testNamespace(t, kubeConfig, "lease");
  let lost = 0;
  const failing = new LeaderElection({
    kubeConfig,
    namespace,
    name: "rlark-hub",
    identity: "failing",
    ...quick,
    logger: silentLogger,
    onStartedLeading: () => {
      throw new Error("the store is not ready");
    },
    onStoppedLeading: () => {
      lost++;
    },
  });
  t.teardown(() => failing.stop());
  failing.start();
  await waitFor("the failing leader gives the lead up", () => lost > 0, onKube);
  t.equal(failing.leading, false, "it no longer says it leads");
  // as the hub does on losing the lead: it stops (exits), and its Lease runs out
  await failing.stop();

  let started = false;
  const standby = new LeaderElection({
    kubeConfig,
    namespace,
    name: "rlark-hub",
    identity: "standby",
    ...quick,
    logger: silentLogger,
    onStartedLeading: () => {
      started = true;
    },
    onStoppedLeading: () => {},
  });
  t.teardown(() => standby.stop());
  standby.start();
  await waitFor("the standby leads", () => started && standby.leading, onKube);
  t.ok(standby.leading);
});

t.test("a leader goes on renewing while it starts, however long that takes", async (t) => {
  const namespace = await testNamespace(t, kubeConfig, "lease");
  let lost = 0;
  let startDone = false;
  const slow = new LeaderElection({
    kubeConfig,
    namespace,
    name: "rlark-hub",
    identity: "slow",
    ...quick,
    logger: silentLogger,
    // longer than the renew deadline, as applying a large revision may be
    onStartedLeading: () =>
      new Promise<void>((resolve) =>
        setTimeout(() => {
          startDone = true;
          resolve();
        }, quick.renewDeadlineMs * 2),
      ),
    onStoppedLeading: () => {
      lost++;
    },
  });
  t.teardown(() => slow.stop());
  slow.start();
  await waitFor("the slow start to finish", () => startDone, onKube);
  t.equal(lost, 0, "it never lost the lead");
  t.ok(slow.leading, "it still leads");
});

/** The fleet's apiserver through a TCP relay that can be frozen: connections stay open, nothing comes back. */
async function freezableApiserver(t: Test) {
  const proxy = await apiserverProxy(t, kubeConfig);
  return { kubeConfig: kubeConfigThrough(kubeConfig, proxy), freeze: proxy.freeze, thaw: proxy.thaw };
}

t.test("a leader whose apiserver hangs stops leading by the renew deadline", async (t) => {
  const namespace = await testNamespace(t, kubeConfig, "lease");
  const apiserver = await freezableApiserver(t);
  let lost = 0;
  const leader = new LeaderElection({
    kubeConfig: apiserver.kubeConfig,
    namespace,
    name: "rlark-hub",
    identity: "cut-off",
    ...quick,
    logger: silentLogger,
    onStartedLeading: () => {},
    onStoppedLeading: () => {
      lost++;
    },
  });
  t.teardown(() => leader.stop());
  leader.start();
  await waitFor("it leads", () => leader.leading, onKube);
  apiserver.freeze();
  await waitFor("it stops leading, its requests hanging", () => lost > 0, onKube);
  t.equal(leader.leading, false);
});

t.test("a leader that lost the lead never leads again: another candidate takes over", async (t) => {
  const namespace = await testNamespace(t, kubeConfig, "lease");
  const apiserver = await freezableApiserver(t);
  let started = 0;
  let lost = 0;
  const leader = new LeaderElection({
    kubeConfig: apiserver.kubeConfig,
    namespace,
    name: "rlark-hub",
    identity: "was-cut-off",
    ...quick,
    logger: silentLogger,
    onStartedLeading: () => {
      started++;
    },
    onStoppedLeading: () => {
      lost++;
    },
  });
  t.teardown(() => leader.stop());
  leader.start();
  await waitFor("it leads", () => leader.leading, onKube);
  apiserver.freeze();
  await waitFor("it stops leading", () => lost > 0, onKube);
  // The apiserver answers again: the Lease still names the old leader, which must not renew it
  // (what it started may still be stopping), so it expires and the other candidate leads.
  apiserver.thaw();
  let otherStarted = false;
  const other = new LeaderElection({
    kubeConfig,
    namespace,
    name: "rlark-hub",
    identity: "other",
    ...quick,
    logger: silentLogger,
    onStartedLeading: () => {
      otherStarted = true;
    },
    onStoppedLeading: () => {},
  });
  t.teardown(() => other.stop());
  other.start();
  await waitFor("the other candidate leads", () => otherStarted && other.leading, onKube);
  t.equal(started, 1, "the first leader started leading once");
  t.equal(leader.leading, false, "and does not lead");
});
