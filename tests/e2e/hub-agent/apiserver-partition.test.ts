// The fault matrix's "API server × partition" cell (docs/reliability.md): the agent's path to its
// workload cluster's API server goes silent for 20 s (a proxy that drops bytes both ways and
// answers no new connection: no reset, no refusal, as a cut link looks), not the path to the hub.
// Meanwhile a Job is committed. The cluster stays Online; once the path is back the agent's
// watches are opened again and its apply retried: the new Job's Deployment is made once, after
// the partition, and the one made before is neither made again nor lost.
import { AppsV1Api } from "@kubernetes/client-node";
import t from "tap";
import { type Cluster, JOB_LABEL } from "../../../operators/api/index.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { startFleetKubeAgent } from "../../helpers/fleet-agent-identity.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { clusterYaml, jobYaml, trainerTaskYaml } from "../../helpers/job-yaml.ts";
import { apiserverProxy, kubeConfigThrough } from "../../helpers/store-through-proxy.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const CUT_MS = 20_000;

t.test(
  "the agent cut from its API server: the hub goes on, the apply waits, nothing lost or doubled",
  async (t) => {
    const kc = fleetCluster().kubeConfig;
    const proxy = await apiserverProxy(t, kc);
    const namespace = await testNamespace(t, kc, "api-cut");
    const job = (name: string) =>
      jobYaml(name, [trainerTaskYaml({ namespace, replicas: 1, resources: '{ requests: { cpu: "10m" } }' })]);
    const { hub, git } = await startHubOnGit(t, {
      files: { "cluster.yaml": clusterYaml("cut", "kubernetes"), "a.yaml": job("a") },
    });
    await waitFor("the cluster from git", async () => hub.store.get("Cluster", undefined, "cut"), onKube);
    await startFleetKubeAgent(t, hub, kubeConfigThrough(kc, proxy), namespace, "cut");
    // the test's own view of the cluster goes around the proxy
    const apps = kc.makeApiClient(AppsV1Api);
    const ofJob = async (name: string) =>
      (await apps.listNamespacedDeployment({ namespace })).items.filter(
        (d) => d.metadata?.labels?.[JOB_LABEL] === name,
      );
    const [before] = await waitFor(
      "job a's Deployment",
      async () => {
        const found = await ofJob("a");
        return found.length > 0 ? found : undefined;
      },
      onKube,
    );

    proxy.freeze();
    let cut = true;
    t.teardown(() => {
      if (cut) proxy.thaw();
    });
    const cutAt = Date.now();
    await git.commit({ "b.yaml": job("b") });
    await waitFor(
      "job b's Task on the hub",
      async () =>
        (await hub.store.list("Task")).items.some((task) => task.metadata.labels?.[JOB_LABEL] === "b"),
      onKube,
    );
    while (Date.now() - cutAt < CUT_MS) {
      t.same(await ofJob("b"), [], "nothing reaches the API server while the path is cut");
      const cluster = await hub.store.get<Cluster>("Cluster", undefined, "cut");
      t.equal(cluster?.status?.phase, "Online", "the cluster stays Online: the hub's path is not cut");
      await new Promise((resolve) => setTimeout(resolve, 4000));
    }
    proxy.thaw();
    cut = false;

    const b = await waitFor(
      "job b's Deployment once the path is back",
      async () => {
        const found = await ofJob("b");
        return found.length > 0 ? found : undefined;
      },
      onKube,
    );
    t.equal(b.length, 1, "made once");
    const a = await ofJob("a");
    t.equal(a.length, 1, "job a's Deployment is still the one");
    t.equal(a[0]?.metadata?.uid, before?.metadata?.uid, "neither made again nor replaced");
    await waitFor(
      "job b's pod reported to the hub again",
      async () =>
        (await hub.store.list("Pod", { namespace: "agent-cut" })).items.some(
          (p) =>
            p.metadata.labels?.[JOB_LABEL] === "b" && (p.status as { phase?: string }).phase === "Running",
        ),
      onKube,
    );
    t.pass("the agent's watches came back: b's pod is on the hub");
  },
);
