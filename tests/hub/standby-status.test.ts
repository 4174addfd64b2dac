// Only the leading hub commits status: two hubs on one kubernetes store (the shared fleet) and one
// git server, the standby sees every status change the leader makes and commits none of them (the
// chaos soak found a standby committing status, racing the leader's pushes on the status branch);
// once it leads, it commits.
import t from "tap";
import { documentPathOnBranch, type StatusCommitResult } from "../../operators/feedback/index.ts";
import { fleetCluster, testNamespace } from "../helpers/fleet.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { rawJobYaml } from "../helpers/job-yaml.ts";
import { kubeStoreFixture } from "../helpers/kube-store.ts";
import { onKube, waitFor } from "../helpers/wait-for.ts";

t.test("a standby commits no status; once it leads it does", async (t) => {
  const fixture = await kubeStoreFixture(t);
  const namespace = await testNamespace(t, fleetCluster(0).kubeConfig, "standby-status");
  const job = (name: string) => rawJobYaml({ name, command: ["sleep", "1"] });
  const a = await startHubOnGit(t, {
    files: { "x.yaml": job("x") },
    store: {
      backend: "kubernetes",
      kubeconfig: fixture.kubeconfigFile,
      namespace,
      servedGroup: fixture.group,
    },
    leaderElection: { identity: "a", leaseMs: 6000, renewDeadlineMs: 4500, retryMs: 500, onLost: () => {} },
    statusBranch: "rlark/status",
    statusDebounceMs: 50,
  });
  await waitFor("hub a leads", () => a.hub.leading(), onKube);
  const b = await startHubOnGit(t, {
    git: a.git,
    store: {
      backend: "kubernetes",
      kubeconfig: fixture.kubeconfigFile,
      namespace,
      servedGroup: fixture.group,
    },
    leaderElection: { identity: "b", leaseMs: 6000, renewDeadlineMs: 4500, retryMs: 500, onLost: () => {} },
    statusBranch: "rlark/status",
    statusDebounceMs: 50,
  });
  const commits = (hub: typeof a.hub) => {
    const seen: StatusCommitResult[] = [];
    hub.statusWriter?.on("commit", (result) => {
      if (result.committed) seen.push(result);
    });
    return seen;
  };
  const byA = commits(a.hub);
  const byB = commits(b.hub);
  /** The documents on the status branch, by document path (the branch shards them). */
  const statusFiles = async () =>
    (await a.git.gitBare("ls-tree", "-r", "--name-only", "rlark/status").catch(() => ""))
      .split("\n")
      .map(documentPathOnBranch);
  await waitFor(
    "hub a commits Job x's status",
    async () => (await statusFiles()).includes("status/job/x.yaml"),
    onKube,
  );
  await waitFor(
    "the standby's store has Job x's status",
    async () => (await b.hub.store.get("Job", undefined, "x"))?.status !== undefined,
    onKube,
  );
  // Another change and its commit by a: by then b has seen both changes for longer than its
  // debounce, so a b that commits as a standby would have.
  await a.git.commit({ "y.yaml": job("y") });
  const before = byA.length;
  await waitFor(
    "hub a commits Job y's status",
    async () => byA.length > before && (await statusFiles()).includes("status/job/y.yaml"),
    onKube,
  );
  await waitFor(
    "the standby's store has Job y's status",
    async () => (await b.hub.store.get("Job", undefined, "y"))?.status !== undefined,
    onKube,
  );
  t.notOk(b.hub.leading(), "b stands by");
  t.same(byB, [], "the standby committed no status");

  await a.hub.stop(); // releases the Lease
  await waitFor("hub b leads", () => b.hub.leading(), onKube);
  await a.git.commit({ "z.yaml": job("z") });
  await waitFor(
    "hub b, leading, commits Job z's status",
    async () => byB.length > 0 && (await statusFiles()).includes("status/job/z.yaml"),
    onKube,
  );
  t.pass("the new leader commits status");
});
