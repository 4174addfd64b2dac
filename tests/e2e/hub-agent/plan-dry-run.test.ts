// A pull-request plan's server-side dry-run against a real kube-apiserver (hack/kube): the hub
// asks the cluster's kubernetes-runtime agent over the tunnel, the agent applies each workload
// with dryRun=All through its own client, and the API server's own verdict reaches the plan.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { AppsV1Api, CoreV1Api } from "@kubernetes/client-node";
import t from "tap";
import { kubernetesDryRun } from "../../../operators/agent/runtimes/kubernetes/workloads/dry-run.ts";
import {
  createTunnelDryRunner,
  liveFromStore,
  planTree,
  renderPlanMarkdown,
} from "../../../operators/feedback/plan/index.ts";
import { DRY_RUN_PURPOSE, parseDryRunAnswer } from "../../../operators/lib/tunnel/index.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { jobYaml, trainerTaskYaml } from "../../helpers/job-yaml.ts";
import { startKubernetesAgentOnHub } from "../../helpers/kubernetes-agent-on-hub.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc } = fleetCluster(0);

const CLUSTER = `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata:
  name: gpu
spec:
  runtime: kubernetes
`;

function job(name: string, namespace: string, resources: string): string {
  return jobYaml(name, [trainerTaskYaml({ namespace, replicas: 1, resources })]);
}

t.test("a plan dry-runs each workload on the cluster's API server through the agent", async (t) => {
  const namespace = await testNamespace(t, kc, "plan-dry-run");
  const { hub } = await startHubOnGit(t, { files: { "clusters.yaml": CLUSTER } });
  await waitFor("the Cluster from git", async () => await hub.store.get("Cluster", undefined, "gpu"), onKube);

  await startKubernetesAgentOnHub(t, hub, "gpu", {
    kubeConfig: kc,
    namespace,
    dryRun: kubernetesDryRun(kc, namespace),
    reportIntervalMs: 500,
  });
  await waitFor(
    "the agent's nodes reported",
    async () => {
      const nodes = await hub.store.list("Node", { namespace: "agent-gpu" });
      const cluster = await hub.store.get("Cluster", undefined, "gpu");
      return nodes.items.length > 0 && cluster?.status ? true : undefined;
    },
    onKube,
  );

  // The revision under review: one valid workload, one the schema lets through but the API
  // server refuses (a CPU request above its limit), one in a namespace the cluster does not have
  // yet (the agent creates it when it applies, so the plan must not call that a failure).
  const revision = await mkdtemp(path.join(tmpdir(), "rlark-plan-rev-"));
  await writeFile(path.join(revision, "clusters.yaml"), CLUSTER);
  await writeFile(path.join(revision, "good.yaml"), job("good", namespace, `{ requests: { cpu: "250m" } }`));
  await writeFile(
    path.join(revision, "badqty.yaml"),
    job("badqty", namespace, `{ requests: { cpu: "2" }, limits: { cpu: "1" } }`),
  );
  await writeFile(
    path.join(revision, "nons.yaml"),
    job("nons", `${namespace}-missing`, `{ requests: { cpu: "250m" } }`),
  );
  const dryRunner = createTunnelDryRunner({
    request: (cluster, body) => hub.tunnel.request(cluster, DRY_RUN_PURPOSE, body),
  });
  const plan = await planTree({
    dir: revision,
    revision: "review",
    live: await liveFromStore(hub.store),
    against: "the live state",
    dryRunner,
    workloadNamespace: namespace,
  });
  t.ok(plan.valid, "the revision passes validation: only the API server can judge these");
  const byJob = Object.fromEntries((plan.dryRun ?? []).map((r) => [r.job, r]));
  t.same(Object.keys(byJob).sort(), ["badqty", "good", "nons"], "every placed workload was dry-run");
  t.match(byJob.good, { cluster: "gpu", object: `Deployment/${namespace}/good-trainer`, state: "passed" });
  t.equal(byJob.badqty?.state, "failed");
  t.match(byJob.badqty?.message, /must be less than or equal to cpu limit/);
  t.match(
    byJob.nons,
    { object: `Deployment/${namespace}-missing/nons-trainer`, state: "passed" },
    "a workload in a namespace the agent would create passes",
  );
  const comment = renderPlanMarkdown(plan);
  t.match(comment, /must be less than or equal to cpu limit/, "the API server's words reach the comment");
  t.notMatch(comment, /not found/);

  const apps = kc.makeApiClient(AppsV1Api);
  const left = await apps.listNamespacedDeployment({ namespace });
  t.same(
    left.items.map((d) => d.metadata?.name),
    [],
    "a dry-run persists nothing",
  );
  const core = kc.makeApiClient(CoreV1Api);
  const namespaces = await core.listNamespace();
  t.notOk(
    namespaces.items.some((n) => n.metadata?.name === `${namespace}-missing`),
    "nor the namespace it checked",
  );

  // A namespace the agent could not create fails as the API server says (here: not a valid name).
  const badNamespace = await dryRunner.dryRun("gpu", {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "x", namespace: "Not_A_Namespace", labels: { app: "x" } },
    spec: {
      selector: { matchLabels: { app: "x" } },
      template: { metadata: { labels: { app: "x" } }, spec: { containers: [{ name: "x", image: "x" }] } },
    },
  });
  t.match(badNamespace, { state: "failed", message: /Not_A_Namespace/ });

  const secret = parseDryRunAnswer(
    await hub.tunnel.request("gpu", DRY_RUN_PURPOSE, {
      object: { apiVersion: "v1", kind: "Secret", metadata: { name: "probe", namespace } },
    }),
  );
  t.match(
    secret,
    { state: "error", message: /v1 Secret is not a workload this agent dry-runs/ },
    "the agent refuses to dry-run anything but a plan's workloads",
  );

  const away = await dryRunner.dryRun("nowhere", {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "x", namespace, labels: {} },
    spec: {},
  });
  t.match(away, { state: "offline", message: /^cluster offline, not dry-run/ });
});
