// One repository, one Bundle, two clusters of the shared fleet: an agentless one (a sealed
// kubeconfig, the hub's in-process agent, ADR 0010) and one with its own agent. The hub runs with
// --no-self-heal: a field changed by hand is reported (phase Drifted, the field named) and left.
// A revision with a kind the Bundle does not allow and a plain Secret is refused with file and
// line, and neither the Secret's value nor the kubeconfig's token is in any API response, log line
// or the status the hub keeps.
import { randomBytes } from "node:crypto";
import { PassThrough } from "node:stream";
import { CoreV1Api, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import t, { type Test } from "tap";
import { KubernetesRuntime } from "../../../operators/agent/runtimes/kubernetes/index.ts";
import type { Bundle, BundleRelease } from "../../../operators/api/index.ts";
import { runAgentlessClusters } from "../../../operators/cli/agentless.ts";
import type { Hub } from "../../../operators/hub/hub.ts";
import { jsonLogger } from "../../../operators/lib/logger.ts";
import { clusterKubeconfigContext, sealValue } from "../../../operators/lib/seal/index.ts";
import { startAgentOnHub } from "../../helpers/agent-on-hub.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { refusedRevision } from "../../helpers/source-status.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const lab = fleetCluster(0);
const edge = fleetCluster(1);
const labCore = lab.kubeConfig.makeApiClient(CoreV1Api);
const edgeCore = edge.kubeConfig.makeApiClient(CoreV1Api);

/** A cluster-admin ServiceAccount token on the agentless cluster: a credential no output may hold. */
async function adminToken(t: Test, namespace: string): Promise<string> {
  const rbac = lab.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  await labCore.createNamespacedServiceAccount({ namespace, body: { metadata: { name: "hub" } } });
  const binding = `${namespace}-hub`;
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: binding, labels: { "rlark.io/test": "true" } },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
      subjects: [{ kind: "ServiceAccount", name: "hub", namespace }],
    },
  });
  t.teardown(() => rbac.deleteClusterRoleBinding({ name: binding }).catch(() => undefined));
  const request = await labCore.createNamespacedServiceAccountToken({
    name: "hub",
    namespace,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const token = request.status?.token;
  if (!token) throw new Error("no token");
  return token;
}

function kubeconfigText(token: string): string {
  return `apiVersion: v1
kind: Config
clusters: [{ name: lab, cluster: { server: ${lab.server}, certificate-authority-data: ${lab.kubeConfig.getCurrentCluster()?.caData} } }]
users: [{ name: hub, user: { token: ${token} } }]
contexts: [{ name: lab, context: { cluster: lab, user: hub } }]
current-context: lab
`;
}

const clusters = (sealed: string) => `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata: { name: lab, labels: { env: lab } }
spec:
  runtime: kubernetes
  access: kubeconfig
  kubeconfig: { sealed: "${sealed}" }
---
apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata: { name: edge, labels: { env: lab } }
spec: { runtime: kubernetes }
`;

const bundle = (namespace: string) => `apiVersion: rlinf.io/v1alpha1
kind: Bundle
metadata: { name: site }
spec:
  path: site
  namespace: ${namespace}
  clusterSelector: { matchLabels: { env: lab } }
`;

const files = {
  "site/settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata: { name: settings }
data: { level: info }
`,
  "site/service.yaml": `apiVersion: v1
kind: Service
metadata: { name: site }
spec:
  ports: [{ port: 80 }]
`,
};

const release = (hub: Hub, cluster: string) =>
  hub.store.get<BundleRelease>("BundleRelease", `agent-${cluster}`, "site");

t.test(
  "an agentless and an agent cluster from one Bundle; drift only reported; refusals leak nothing",
  async (t) => {
    // One namespace name on both clusters: the Bundle's namespace is the same everywhere.
    const namespace = await testNamespace(t, lab.kubeConfig, "bundle-two");
    await edgeCore.createNamespace({
      body: { metadata: { name: namespace, labels: { "rlark.io/test": "true" } } },
    });
    t.teardown(() => edgeCore.deleteNamespace({ name: namespace }).catch(() => undefined));
    const token = await adminToken(t, namespace);
    const lines: string[] = [];
    const logged = new PassThrough();
    logged.on("data", (chunk: Buffer) => lines.push(chunk.toString()));
    const logger = jsonLogger("hub", logged);
    const { git, hub, dataDir } = await startHubOnGit(t, {
      files: { "placeholder.yaml": "# nothing yet\n" },
      selfHeal: false,
      logger,
    });
    const tuning = { retryIntervalMs: 500, addonPollIntervalMs: 500, bundleDriftIntervalMs: 500 };
    const run = await runAgentlessClusters(hub, dataDir, jsonLogger("agentless", logged), {
      retryIntervalMs: 500,
      reportIntervalMs: 500,
      runtime: { instance: `lab${randomBytes(3).toString("hex")}`, defaultNamespace: namespace, ...tuning },
    });
    t.teardown(() => run.stop());
    const sealed = sealValue(
      kubeconfigText(token),
      hub.sealKeys.currentPublicKeyPem(),
      clusterKubeconfigContext("lab"),
    );
    await git.commit({ "clusters.yaml": clusters(sealed), "bundle.yaml": bundle(namespace), ...files });
    await waitFor(
      "the edge Cluster from git",
      async () => hub.store.get("Cluster", undefined, "edge"),
      onKube,
    );
    const runtime = await KubernetesRuntime.start({
      kubeConfig: edge.kubeConfig,
      defaultNamespace: namespace,
      instance: `edge${randomBytes(3).toString("hex")}`,
      ...tuning,
    });
    await startAgentOnHub(t, hub, "edge", { runtime, runtimeKind: "kubernetes", reportIntervalMs: 500 });

    for (const cluster of ["lab", "edge"]) {
      const ready = await waitFor(
        `the Bundle Ready on ${cluster}`,
        async () => {
          const r = await release(hub, cluster);
          return r?.status?.phase === "Ready" ? r : undefined;
        },
        { attempts: 480, everyMs: 250 },
      );
      t.same(ready.status?.objects?.map((o) => [o.kind, o.health]).sort(), [
        ["ConfigMap", "Healthy"],
        ["Service", "Healthy"],
      ]);
    }
    t.equal((await labCore.readNamespacedConfigMap({ name: "settings", namespace })).data?.level, "info");
    t.equal((await edgeCore.readNamespacedConfigMap({ name: "settings", namespace })).data?.level, "info");

    // Drift with --no-self-heal: reported, the field named, and left as the hand made it.
    await labCore.patchNamespacedConfigMap(
      { name: "settings", namespace, body: [{ op: "replace", path: "/data/level", value: "debug" }] },
      undefined,
    );
    const drifted = await waitFor(
      "the drift reported on lab",
      async () => {
        const r = await release(hub, "lab");
        return r?.status?.phase === "Drifted" ? r : undefined;
      },
      onKube,
    );
    t.same(drifted.status?.objects?.find((o) => o.kind === "ConfigMap")?.drifted, ["/data/level"]);
    t.match(drifted.status?.conditions, [{ type: "Drifted", status: "True", reason: "Drifted" }]);
    await waitFor(
      "the Bundle's status Drifted",
      async () => (await hub.store.get<Bundle>("Bundle", undefined, "site"))?.status?.phase === "Drifted",
      onKube,
    );
    t.equal(
      (await labCore.readNamespacedConfigMap({ name: "settings", namespace })).data?.level,
      "debug",
      "not corrected",
    );
    t.equal((await release(hub, "edge"))?.status?.phase, "Ready", "the other cluster is in sync");

    // Refused: a kind not allowed and a plain Secret; what was applied stays.
    const value = `pw-${randomBytes(12).toString("hex")}`;
    const refused = await git.commit({
      "site/secret.yaml": `apiVersion: v1\nkind: Secret\nmetadata: { name: db }\nstringData: { password: ${value} }\n`,
      "site/quota.yaml":
        "apiVersion: v1\nkind: ResourceQuota\nmetadata: { name: q }\nspec: { hard: { pods: '5' } }\n",
    });
    const status = await refusedRevision(hub, refused);
    t.match(
      status.errors?.map((e) => [e.file, e.line, e.rule]),
      [
        ["site/quota.yaml", 2, "bundle/kind-not-allowed"],
        ["site/secret.yaml", 2, "bundle/plain-secret"],
      ],
    );
    t.equal((await edgeCore.readNamespacedService({ name: "site", namespace })).spec?.ports?.[0]?.port, 80);

    // Nothing the hub says or keeps holds the Secret's value or the kubeconfig's token.
    const responses: string[] = [];
    for (const route of [
      "/api/v1/source",
      "/api/v1/rlinf.io/v1alpha1/bundles",
      "/api/v1/rlinf.io/v1alpha1/bundlereleases",
      "/api/v1/rlinf.io/v1alpha1/clusters",
    ]) {
      const res = await fetch(`${hub.url}${route}`, {
        headers: { authorization: `Bearer ${hub.adminToken}` },
      });
      t.equal(res.status, 200, route);
      responses.push(await res.text());
    }
    const kept = JSON.stringify([
      ...(await hub.store.list("Bundle")).items,
      ...(await hub.store.list("BundleRelease")).items,
    ]);
    const tokenSecret = token.split(".")[2] ?? token;
    for (const [what, text] of [
      ["API responses", responses.join("\n")],
      ["log lines", lines.join("")],
      ["the store's Bundles and releases", kept],
    ] as const) {
      t.notOk(text.includes(value), `no Secret value in ${what}`);
      t.notOk(text.includes(tokenSecret), `no kubeconfig token in ${what}`);
    }
    t.ok(lines.join("").includes("bundle drift"), "the drift was logged");
  },
);
