import path from "node:path";
import t from "tap";
import { fleetCluster, testNamespace } from "../helpers/fleet.ts";
import { fillToLastByte, smallTmpfs } from "../helpers/full-disk.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { rawJobYaml } from "../helpers/job-yaml.ts";
import { kubeStoreFixture } from "../helpers/kube-store.ts";
import { onKube, waitFor } from "../helpers/wait-for.ts";

t.test("a standby whose data dir is full: nothing visible, its reads follow the leader", async (t) => {
  const fixture = await kubeStoreFixture(t);
  const namespace = await testNamespace(t, fleetCluster(0).kubeConfig, "standby-full");
  const job = (name: string) => rawJobYaml({ name, command: ["sleep", "1"] });
  const store = {
    backend: "kubernetes" as const,
    kubeconfig: fixture.kubeconfigFile,
    namespace,
    servedGroup: fixture.group,
  };
  const election = { leaseMs: 6000, renewDeadlineMs: 4500, retryMs: 500, onLost: () => {} };
  const a = await startHubOnGit(t, {
    files: { "x.yaml": job("x") },
    store,
    leaderElection: { identity: "a", ...election },
  });
  await waitFor("hub a leads", () => a.hub.leading(), onKube);

  const dataDir = await smallTmpfs(t, "rlark-standby-full-");
  const b = await startHubOnGit(t, {
    git: a.git,
    dataDir,
    store,
    leaderElection: { identity: "b", ...election },
  });
  const readyz = async (url: string) => (await fetch(`${url}/readyz`)).status;
  await waitFor("hub b stands by", async () => (await readyz(b.hub.url)) === 503, onKube);
  await waitFor(
    "the standby serves Job x",
    async () => (await b.hub.store.get("Job", undefined, "x")) !== undefined,
    onKube,
  );

  await fillToLastByte(path.join(dataDir, "filler"));
  await a.git.commit({ "y.yaml": job("y") });
  await waitFor(
    "the leader applies Job y",
    async () => (await a.hub.store.get("Job", undefined, "y")) !== undefined,
    onKube,
  );
  const seen = await waitFor(
    "the full standby serves Job y through its API",
    async () => {
      const answer = await fetch(`${b.hub.url}/api/v1/rlinf.io/v1alpha1/jobs/y`, {
        headers: { authorization: `Bearer ${b.hub.adminToken}` },
      });
      return answer.status === 200 ? ((await answer.json()) as { metadata: { name: string } }) : undefined;
    },
    onKube,
  );
  t.equal(seen.metadata.name, "y");
  t.equal(await readyz(b.hub.url), 503, "b is still a standby");
  t.notOk(b.hub.leading(), "b does not lead");
  t.ok(a.hub.leading(), "a still leads");
});
