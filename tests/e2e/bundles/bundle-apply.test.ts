// A Bundle on an agent cluster's real API server (the shared kwok fleet): its folder's manifests
// are applied by server-side apply with field manager rlark-bundle, changed, and pruned when
// removed from git; an object of the same kind and namespace the Bundle did not create is never
// touched; a Service port change 80 → 3200 leaves one port (seed 003); a field changed by hand
// is reported and applied back (self-heal); status per bundle and per object reaches the hub's API.
import { randomBytes } from "node:crypto";
import { AppsV1Api, CoreV1Api } from "@kubernetes/client-node";
import t from "tap";
import { KubernetesRuntime } from "../../../operators/agent/runtimes/kubernetes/index.ts";
import type { BundleRelease } from "../../../operators/api/index.ts";
import type { Hub } from "../../../operators/hub/hub.ts";
import { startAgentOnHub } from "../../helpers/agent-on-hub.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc } = fleetCluster(0);
const core = kc.makeApiClient(CoreV1Api);
const apps = kc.makeApiClient(AppsV1Api);

const cluster = `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata: { name: lab, labels: { env: lab } }
spec: { runtime: kubernetes }
`;

const bundle = (namespace: string) => `apiVersion: rlinf.io/v1alpha1
kind: Bundle
metadata: { name: web }
spec:
  path: apps/web
  namespace: ${namespace}
  clusterSelector: { matchLabels: { env: lab } }
`;

const service = (port: number) => `apiVersion: v1
kind: Service
metadata: { name: web }
spec:
  selector: { app: web }
  ports: [{ name: http, port: ${port}, targetPort: 8080 }]
`;

const deployment = (replicas: number) => `apiVersion: apps/v1
kind: Deployment
metadata: { name: web }
spec:
  replicas: ${replicas}
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec:
      containers: [{ name: web, image: nginx }]
`;

const configMap = (value: string) => `apiVersion: v1
kind: ConfigMap
metadata: { name: settings }
data: { level: "${value}" }
`;

function release(hub: Hub): Promise<BundleRelease | undefined> {
  return hub.store.get<BundleRelease>("BundleRelease", "agent-lab", "web");
}

t.test("a Bundle's manifests are applied, changed, healed and pruned; nothing else is touched", async (t) => {
  const namespace = await testNamespace(t, kc, "bundle-apply");
  // Someone else's ConfigMap in the same namespace: the Bundle must never delete it.
  await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: "not-ours" } } });
  const { git, hub, revision } = await startHubOnGit(t, {
    files: {
      "clusters.yaml": cluster,
      "bundles/web.yaml": bundle(namespace).replace("path: apps/web", "path: ../apps/web"),
      "apps/web/service.yaml": service(80),
      "apps/web/deployment.yaml": deployment(1),
      "apps/web/settings.yaml": configMap("info"),
    },
  });
  await waitFor("the Cluster from git", async () => hub.store.get("Cluster", undefined, "lab"), onKube);
  const runtime = await KubernetesRuntime.start({
    kubeConfig: kc,
    defaultNamespace: namespace,
    instance: `lab${randomBytes(3).toString("hex")}`,
    retryIntervalMs: 500,
    addonPollIntervalMs: 500,
    bundleDriftIntervalMs: 500,
  });
  await startAgentOnHub(t, hub, "lab", { runtime, runtimeKind: "kubernetes", reportIntervalMs: 500 });

  const svc = await waitFor(
    "the Service applied",
    () => core.readNamespacedService({ name: "web", namespace }),
    onKube,
  );
  t.same(
    svc.spec?.ports?.map((p) => p.port),
    [80],
  );
  t.equal(svc.metadata?.labels?.["rlark.io/bundle"], "web");
  t.ok(
    svc.metadata?.managedFields?.some((f) => f.manager === "rlark-bundle" && f.operation === "Apply"),
    "applied by server-side apply as rlark-bundle",
  );
  await waitFor(
    "the ConfigMap applied",
    () => core.readNamespacedConfigMap({ name: "settings", namespace }),
    onKube,
  );

  // Status per bundle and per object, on the hub's API.
  const ready = await waitFor(
    "the release Ready with its objects healthy",
    async () => {
      const r = await release(hub);
      return r?.status?.phase === "Ready" && r.status.objects?.length === 3 ? r : undefined;
    },
    onKube,
  );
  t.equal(ready.status?.revision, revision, "the revision applied");
  t.same(ready.status?.objects?.map((o) => [o.kind, o.name, o.health]).sort(), [
    ["ConfigMap", "settings", "Healthy"],
    ["Deployment", "web", "Healthy"],
    ["Service", "web", "Healthy"],
  ]);
  const api = await fetch(`${hub.url}/api/v1/rlinf.io/v1alpha1/bundles/web`, {
    headers: { authorization: `Bearer ${hub.adminToken}` },
  });
  t.equal(api.status, 200);
  const served = (await api.json()) as { status?: { phase?: string; clusters?: { cluster: string }[] } };
  await waitFor(
    "the Bundle's status Ready on the API",
    async () => {
      const res = await fetch(`${hub.url}/api/v1/rlinf.io/v1alpha1/bundles/web`, {
        headers: { authorization: `Bearer ${hub.adminToken}` },
      });
      const body = (await res.json()) as typeof served;
      return body.status?.phase === "Ready" && body.status.clusters?.[0]?.cluster === "lab"
        ? body
        : undefined;
    },
    onKube,
  );

  // Drift: a field the Bundle owns changed by hand is reported and applied back.
  await apps.patchNamespacedDeployment(
    { name: "web", namespace, body: [{ op: "replace", path: "/spec/replicas", value: 3 }] },
    undefined,
  );
  await waitFor(
    "the replicas put back to git's",
    async () => (await apps.readNamespacedDeployment({ name: "web", namespace })).spec?.replicas === 1,
    onKube,
  );
  const healed = await waitFor(
    "the drift reported as corrected",
    async () => {
      const condition = (await release(hub))?.status?.conditions?.find((c) => c.type === "Drifted");
      return condition?.reason === "Corrected" ? condition : undefined;
    },
    onKube,
  );
  t.match(healed.message, /Deployment .*\/web: \/spec\/replicas/);

  // Change: the Service port 80 → 3200 leaves one port entry; the ConfigMap leaves git: pruned.
  const changed = await git.commit({
    "apps/web/service.yaml": service(3200),
    "apps/web/settings.yaml": null,
  });
  const replaced = await waitFor(
    "the Service port replaced",
    async () => {
      const s = await core.readNamespacedService({ name: "web", namespace });
      return s.spec?.ports?.some((p) => p.port === 3200) ? s : undefined;
    },
    onKube,
  );
  t.same(
    replaced.spec?.ports?.map((p) => [p.name, p.port]),
    [["http", 3200]],
    "one port entry, no second",
  );
  await waitFor(
    "the ConfigMap pruned",
    async () => {
      const { items } = await core.listNamespacedConfigMap({ namespace });
      return !items.some((c) => c.metadata?.name === "settings");
    },
    onKube,
  );
  await waitFor(
    "the release at the new revision",
    async () => {
      const r = await release(hub);
      return r?.status?.phase === "Ready" && r.status.revision === changed ? r : undefined;
    },
    onKube,
  );
  t.ok(
    await core.readNamespacedConfigMap({ name: "not-ours", namespace }),
    "the ConfigMap the Bundle did not create is still there",
  );

  // The Bundle leaves git: its objects go, the other ConfigMap stays.
  await git.commit({ "bundles/web.yaml": null });
  await waitFor(
    "the Bundle's objects removed",
    async () => {
      const services = (await core.listNamespacedService({ namespace })).items;
      const deployments = (await apps.listNamespacedDeployment({ namespace })).items;
      return services.length === 0 && deployments.length === 0;
    },
    onKube,
  );
  await waitFor("the release gone from the hub", async () => (await release(hub)) === undefined, onKube);
  t.ok(await core.readNamespacedConfigMap({ name: "not-ours", namespace }), "still not touched");
});
