// The fault matrix's "hub leader × partition" (docs/reliability.md), cut from the apiserver: two
// hubs on one kubernetes store (the shared fleet), the leader reaching the apiserver through a
// relay that goes silent (bytes dropped both ways, new connections never answered: a partition as
// either end sees it; not a netns). The leader stops leading by its renew deadline; the standby
// takes the Lease once it has lapsed and applies what git says next; never two leaders at once;
// once the relay answers again the old leader does not lead again.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import t from "tap";
import { fleetCluster, testNamespace } from "../helpers/fleet.ts";
import { createGitServer } from "../helpers/git-server.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { rawJobYaml } from "../helpers/job-yaml.ts";
import { kubeStoreFixture } from "../helpers/kube-store.ts";
import { apiserverProxy, kubeConfigThrough } from "../helpers/store-through-proxy.ts";
import { onKube, waitFor } from "../helpers/wait-for.ts";

t.test("a leader cut from the apiserver stops leading; the standby leads; never two at once", async (t) => {
  const fixture = await kubeStoreFixture(t);
  const namespace = await testNamespace(t, fleetCluster(0).kubeConfig, "leader-cut");
  const job = (name: string) => rawJobYaml({ name, command: ["sleep", "1"] });
  const store = (kubeconfig: string) => ({
    backend: "kubernetes" as const,
    kubeconfig,
    namespace,
    servedGroup: fixture.group,
  });
  const election = { leaseMs: 6000, renewDeadlineMs: 4500, retryMs: 500 };
  const relay = await apiserverProxy(t, fixture.kubeConfig);
  const git = await createGitServer();
  t.teardown(() => git.close());
  await git.commit({ "x.yaml": job("x") });
  const cutKubeconfig = path.join(git.root, "through-relay.kubeconfig");
  await writeFile(cutKubeconfig, kubeConfigThrough(fixture.kubeConfig, relay).exportConfig(), {
    mode: 0o600,
  });
  let aLost = false;
  const a = await startHubOnGit(t, {
    git,
    store: store(cutKubeconfig),
    leaderElection: {
      identity: "a",
      ...election,
      onLost: () => {
        aLost = true;
      },
    },
  });
  await waitFor("hub a leads", () => a.hub.leading(), onKube);
  const b = await startHubOnGit(t, {
    git,
    store: store(fixture.kubeconfigFile),
    leaderElection: { identity: "b", ...election, onLost: () => {} },
  });
  const readyz = async (url: string) => (await fetch(`${url}/readyz`)).status;
  await waitFor("hub b stands by", async () => (await readyz(b.hub.url)) === 503, onKube);

  // Both hubs' leading() sampled every 100 ms from here to the end: never both at once.
  let both = 0;
  const sampler = setInterval(() => {
    if (a.hub.leading() && b.hub.leading()) both++;
  }, 100);
  t.teardown(() => clearInterval(sampler));

  relay.freeze();
  const cutAt = Date.now();
  await waitFor("hub a stops leading", () => !a.hub.leading(), onKube);
  const stopped = Date.now() - cutAt;
  t.comment(`a stopped leading ${stopped} ms after the cut (renew deadline ${election.renewDeadlineMs} ms)`);
  t.ok(aLost, "hub a was told it lost the lead (a hub process exits then)");
  await waitFor("hub b leads", () => b.hub.leading(), onKube);
  await git.commit({ "y.yaml": job("y") });
  const jobOn = async (url: string, token: string, name: string) =>
    (
      await fetch(`${url}/api/v1/rlinf.io/v1alpha1/jobs/${name}`, {
        headers: { authorization: `Bearer ${token}` },
      })
    ).status === 200;
  await waitFor("the new leader applies Job y", () => jobOn(b.hub.url, b.hub.adminToken, "y"), onKube);

  relay.thaw();
  await new Promise((resolve) => setTimeout(resolve, election.leaseMs));
  t.notOk(a.hub.leading(), "the old leader, reconnected, does not lead again");
  t.ok(b.hub.leading(), "b leads");
  clearInterval(sampler);
  t.equal(both, 0, "never two leaders at once");
});
