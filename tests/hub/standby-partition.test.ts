// The fault matrix's "hub standby × partition" (docs/reliability.md), cut from the apiserver: two
// hubs on one kubernetes store (the shared fleet), the standby reaching the apiserver through a
// relay that goes silent (bytes dropped both ways, new connections never answered: a partition as
// either end sees it; not a netns). Nothing visible: the leader goes on; with the leader gone the
// cut-off standby cannot take the Lease, so a third hub leads; once the relay answers again the
// standby stays a standby (/readyz 503) and its reads catch up with what the leaders applied.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import t from "tap";
import { fleetCluster, testNamespace } from "../helpers/fleet.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { rawJobYaml } from "../helpers/job-yaml.ts";
import { kubeStoreFixture } from "../helpers/kube-store.ts";
import { apiserverProxy, kubeConfigThrough } from "../helpers/store-through-proxy.ts";
import { onKube, waitFor } from "../helpers/wait-for.ts";

t.test(
  "a standby cut from the apiserver: nothing visible, it cannot take the Lease, then catches up",
  async (t) => {
    const fixture = await kubeStoreFixture(t);
    const namespace = await testNamespace(t, fleetCluster(0).kubeConfig, "standby-cut");
    const job = (name: string) => rawJobYaml({ name, command: ["sleep", "1"] });
    const store = (kubeconfig: string) => ({
      backend: "kubernetes" as const,
      kubeconfig,
      namespace,
      servedGroup: fixture.group,
    });
    const election = { leaseMs: 6000, renewDeadlineMs: 4500, retryMs: 500, onLost: () => {} };
    const a = await startHubOnGit(t, {
      files: { "x.yaml": job("x") },
      store: store(fixture.kubeconfigFile),
      leaderElection: { identity: "a", ...election },
    });
    await waitFor("hub a leads", () => a.hub.leading(), onKube);

    const relay = await apiserverProxy(t, fixture.kubeConfig);
    const cutKubeconfig = path.join(a.git.root, "through-relay.kubeconfig");
    await writeFile(cutKubeconfig, kubeConfigThrough(fixture.kubeConfig, relay).exportConfig(), {
      mode: 0o600,
    });
    const b = await startHubOnGit(t, {
      git: a.git,
      store: store(cutKubeconfig),
      leaderElection: { identity: "b", ...election },
    });
    let bLed = false;
    b.hub.onLeading(() => {
      bLed = true;
    });
    const readyz = async (url: string) => (await fetch(`${url}/readyz`)).status;
    const jobOn = async (url: string, token: string, name: string) =>
      (
        await fetch(`${url}/api/v1/rlinf.io/v1alpha1/jobs/${name}`, {
          headers: { authorization: `Bearer ${token}` },
        })
      ).status === 200;
    await waitFor("hub b stands by", async () => (await readyz(b.hub.url)) === 503, onKube);
    await waitFor("the standby serves Job x", () => jobOn(b.hub.url, b.hub.adminToken, "x"), onKube);

    relay.freeze();
    await a.git.commit({ "y.yaml": job("y") });
    await waitFor("the leader applies Job y", () => jobOn(a.hub.url, a.hub.adminToken, "y"), onKube);
    t.equal(await readyz(b.hub.url), 503, "the cut-off standby still says standby");

    // The leader leaves (and releases the Lease): the cut-off standby cannot write it, a third hub does.
    await a.hub.stop();
    const c = await startHubOnGit(t, {
      git: a.git,
      store: store(fixture.kubeconfigFile),
      leaderElection: { identity: "c", ...election },
    });
    await waitFor("hub c leads", () => c.hub.leading(), onKube);
    await a.git.commit({ "z.yaml": job("z") });
    await waitFor("hub c applies Job z", () => jobOn(c.hub.url, c.hub.adminToken, "z"), onKube);

    relay.thaw();
    await waitFor(
      "the standby, reconnected, serves Jobs y and z",
      async () =>
        (await jobOn(b.hub.url, b.hub.adminToken, "y")) && (await jobOn(b.hub.url, b.hub.adminToken, "z")),
      onKube,
    );
    t.equal(await readyz(b.hub.url), 503, "b is still a standby");
    t.notOk(bLed || b.hub.leading(), "b never led");
    t.ok(c.hub.leading(), "c leads");
  },
);
