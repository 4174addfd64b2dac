// A Bundle object checked against the target cluster's own OpenAPI v3 schemas, fetched by the
// agent from a real kube-apiserver of the fleet: wrong types, unknown fields and values outside an
// enum are named by JSON pointer with the cluster's version; a Quantity written as a number passes
// as the API server takes it; each group-version document is fetched once per Kubernetes version.
// Before applying a changed Bundle the runtime refuses an object that does not fit (nothing of the
// Bundle is applied), and a plan's Bundle dry-run over the agent's tunnel carries the findings:
// server-side apply only warns about an unknown field and drops it, the cluster's schema names it.
import { randomBytes } from "node:crypto";
import { CoreV1Api, VersionApi } from "@kubernetes/client-node";
import t from "tap";
import { KubernetesRuntime, kubernetesDryRun } from "../../../operators/agent/runtimes/kubernetes/index.ts";
import { ClusterOpenApi } from "../../../operators/agent/runtimes/kubernetes/openapi/index.ts";
import { type BundleDryRunOutcome, bundleObjectRow } from "../../../operators/feedback/plan/index.ts";
import { KubeHttp } from "../../../operators/lib/kube-http.ts";
import { jsonLogger } from "../../../operators/lib/logger.ts";
import {
  DRY_RUN_PURPOSE,
  MAX_DRY_RUN_ANSWER_BYTES,
  parseDryRunAnswer,
} from "../../../operators/lib/tunnel/index.ts";
import { startAgentOnHub } from "../../helpers/agent-on-hub.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc } = fleetCluster(0);
const core = kc.makeApiClient(CoreV1Api);
const labels = { "rlark.io/bundle": "site", "rlark.io/managed-by": "rlark-bundle" };

const deployment = (
  namespace: string,
  spec: Record<string, unknown> = {},
  container: Record<string, unknown> = {},
) => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "web", namespace, labels },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: "web" } },
    template: {
      metadata: { labels: { app: "web" } },
      spec: {
        containers: [
          { name: "web", image: "nginx", resources: { requests: { cpu: 1, memory: "64Mi" } }, ...container },
        ],
      },
    },
    ...spec,
  },
});

t.test("the cluster's own OpenAPI schemas judge a Bundle object; fetched once per version", async (t) => {
  const { gitVersion } = await kc.makeApiClient(VersionApi).getCode();
  const http = new KubeHttp({ kubeConfig: kc, maxSockets: 2 });
  t.teardown(() => http.close());
  const openApi = new ClusterOpenApi({ http, version: () => gitVersion, logger: jsonLogger("test") });
  t.same(await openApi.check(deployment("ns")), [], "a well-formed Deployment, cpu as a number");
  const after = { ...http.sent };
  const found = await openApi.check(
    deployment("ns", { replicas: "two", paused: "yes" }, { imagePullPolicy: "Sometimes", colour: "blue" }),
  );
  const suffix = ` (the cluster's OpenAPI, ${gitVersion})`;
  t.same(
    found.sort(),
    [
      `/spec/paused: must be boolean, not string${suffix}`,
      `/spec/replicas: must be integer, not string${suffix}`,
      `/spec/template/spec/containers/0/colour: unknown field${suffix}`,
      `/spec/template/spec/containers/0/imagePullPolicy: must be one of "Always", "IfNotPresent", "Never"${suffix}`,
    ].sort(),
  );
  t.same(http.sent, after, "the second check asked the API server nothing");
  const service = {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "web", namespace: "ns" },
    spec: { ports: [{ port: "80" }, { targetPort: 8080 }] },
  };
  t.same((await openApi.check(service)).sort(), [
    `/spec/ports/0/port: must be integer, not string${suffix}`,
    `/spec/ports/1/port: required${suffix}`,
  ]);
  t.same(openApi.cached().sort(), [`${gitVersion} api/v1`, `${gitVersion} apis/apps/v1`]);
  t.same(await openApi.check({ apiVersion: "v1", kind: "Secret", data: { a: 1 } }), [], "never a Secret");
});

t.test("a Bundle that does not fit the cluster's schema is refused before anything is applied", async (t) => {
  const namespace = await testNamespace(t, kc, "bundle-openapi");
  const runtime = await KubernetesRuntime.start({
    kubeConfig: kc,
    defaultNamespace: namespace,
    instance: `oa${randomBytes(3).toString("hex")}`,
    retryIntervalMs: 500,
    addonPollIntervalMs: 500,
  });
  t.teardown(() => runtime.stop());
  await waitFor("the cluster's version read", async () => runtime.observe().kubernetesVersion, onKube);
  const settings = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "settings", namespace, labels },
    data: { level: "info" },
  };
  const bad = deployment(namespace, {}, { colour: "blue" });
  void runtime.cluster?.applyBundles?.([
    {
      metadata: { name: "site", generation: 1 },
      spec: { namespace, revision: "r1", prune: true, selfHeal: true, objects: [settings, bad] },
    },
  ]);
  const failed = await waitFor(
    "the Bundle Failed",
    async () => runtime.observe().bundles?.find((b) => b.name === "site" && b.phase === "Failed"),
    onKube,
  );
  t.match(
    failed.message,
    /Deployment \S+\/web does not fit this cluster's schema: \/spec\/template\/spec\/containers\/0\/colour: unknown field/,
  );
  t.same(
    failed.objects.map((o) => [o.kind, o.health]),
    [["Deployment", "Degraded"]],
  );
  await t.rejects(core.readNamespacedConfigMap({ name: "settings", namespace }), "nothing of it applied");
});

t.test("a plan's Bundle dry-run over the tunnel carries the cluster's schema findings", async (t) => {
  const namespace = await testNamespace(t, kc, "bundle-openapi-plan");
  const { hub } = await startHubOnGit(t, {
    files: {
      "clusters.yaml":
        "apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata: { name: lab }\nspec: { runtime: kubernetes }\n",
    },
  });
  await waitFor("the Cluster from git", async () => hub.store.get("Cluster", undefined, "lab"), onKube);
  const runtime = await KubernetesRuntime.start({
    kubeConfig: kc,
    defaultNamespace: namespace,
    instance: `oa${randomBytes(3).toString("hex")}`,
  });
  await startAgentOnHub(t, hub, "lab", {
    runtime,
    runtimeKind: "kubernetes",
    dryRun: kubernetesDryRun(kc, namespace, (object) => runtime.checkSchema(object)),
  });
  await waitFor("the agent connected", async () => hub.tunnel.session("lab"), onKube);
  await waitFor("the cluster's version read", async () => runtime.observe().kubernetesVersion, onKube);
  const ask = async (object: Record<string, unknown>) =>
    parseDryRunAnswer(
      await hub.tunnel.request(
        "lab",
        DRY_RUN_PURPOSE,
        { object, bundle: true },
        { maxResponseBytes: MAX_DRY_RUN_ANSWER_BYTES },
      ),
    );
  const good = await ask(deployment(namespace));
  t.match(good, { state: "passed", live: null });
  t.notOk("schema" in good, "no findings for a good one");
  t.match(
    (good as { planned?: { spec?: { strategy?: unknown } } }).planned?.spec?.strategy,
    { type: "RollingUpdate" },
    "the API server's defaults",
  );
  // The API server takes an unknown field with a warning and drops it; the cluster's schema names
  // it, and the plan's row for it fails (bundleObjectRow).
  const bad = await ask(deployment(namespace, { replicas: 2 }, { colour: "blue" }));
  t.equal(bad.state, "passed", "server-side apply only warns about an unknown field");
  t.match(bad.state === "passed" ? bad.schema : [], [
    /^\/spec\/template\/spec\/containers\/0\/colour: unknown field \(the cluster's OpenAPI, v1\./,
  ]);
  const row = bundleObjectRow(
    { bundle: "site", cluster: "lab", object: `Deployment/${namespace}/web` },
    bad as BundleDryRunOutcome,
  );
  t.equal(row.state, "failed", "the plan fails it");
  // A wrong type: server-side apply answers 500 (no typed patch), which alone would read as the
  // agent's trouble; with the cluster's schema naming the field it is the object's, and fails.
  const wrong = await ask(deployment(namespace, { replicas: "two" }));
  t.equal(wrong.state, "failed");
  t.match(
    wrong.state === "failed" ? wrong.message : "",
    /^\/spec\/replicas: must be integer, not string \(the cluster's OpenAPI, v1\.[^)]*\) \(the API server: /,
  );
});
