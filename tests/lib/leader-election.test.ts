// Leader election on a real Lease of the fleet's kube-apiserver (operators/lib/leader-election.ts):
// one candidate leads at a time, and a leader that fails to start gives the lead up rather than
// holding the Lease while doing nothing.
import t from "tap";
import { LeaderElection } from "../../operators/lib/leader-election.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import { fleetCluster, testNamespace } from "../helpers/fleet.ts";
import { onKube, waitFor } from "../helpers/wait-for.ts";

const { kubeConfig } = fleetCluster(0);
const quick = { leaseMs: 3_000, renewDeadlineMs: 2_000, retryMs: 250 };

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
