// The chaos soak of hack/chaos, short, with a fixed seed: two HA hubs on the kubernetes store, a
// process cluster and the shared fleet's two clusters under a stream of commits while the leading
// hub, the standby, an agent, a nodeserver and the git server are killed with -9 and an agent is
// frozen with SIGSTOP for 20-40 s. The shared fleet's API servers and etcd are not killed here (other test
// files use them at the same time), nor is a tunnel made half-open (its iptables rules would show
// in other files' counts): `hack/chaos/soak` does those on a fleet of its own. What it asserts is
// the soak's verdict against git: converged to the last valid revision, nothing lost, nothing run
// twice, no process, fd, network namespace or temp dir left over.
import t from "tap";
import { runSoak } from "../../../hack/chaos/soak.ts";
import { fleetDir } from "../../../hack/kube/paths.ts";

t.test("a short chaos soak: converged, nothing lost, nothing twice, nothing leaked", async (t) => {
  const result = await runSoak(t, {
    durationMs: 60_000,
    seed: 36,
    faults: ["leader", "standby", "agent", "agent-sigstop", "nodeserver", "git"],
    faultEveryMs: 10_000,
    commitEveryMs: 2_000,
    quietBoundMs: 240_000,
    fleetDir: fleetDir(),
    fleetPids: () => [],
    // A CI machine runs this beside the whole suite: a Lease a busy hub can renew in time.
    hubFlags: [
      ...["--leader-elect-lease-duration", "30s", "--leader-elect-renew-deadline", "20s"],
      ...["--leader-elect-retry-period", "2s"],
    ],
    log: (line) => t.comment(line),
    echo: (line) => process.stderr.write(line),
  });
  t.comment(result.line);
  t.ok(
    result.kills > 0 && result.commits > 10,
    `faults and commits happened (${result.kills} kills, ${result.commits} commits)`,
  );
  t.same(result.problems, [], "no invariant broken");
  t.equal(result.lost, 0, "nothing lost");
  t.equal(result.duplicated, 0, "nothing twice");
  t.ok(result.convergedS !== undefined, "converged to git's last valid revision");
});
