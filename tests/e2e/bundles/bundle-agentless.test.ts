// One repository, one Bundle, two clusters of the shared fleet: an agentless one (a sealed
// kubeconfig, the hub's in-process agent, ADR 0010) and one with its own agent. The Bundle's status
// reaches the status branch (status/bundle/site.yaml, per cluster and object) and the rlark/sync
// commit status counts its objects. A plan of a change shows each object's diff against each live
// cluster from the agents' server-side dry-runs (the Service's port replaced, not added; an object
// the Bundle did not create refused), and changes nothing. `rlark cluster test` runs the agentless
// cluster's connectivity test on demand. The hub runs with --no-self-heal: a field changed by hand
// is reported (phase Drifted, the field named) and left. A revision with a kind the Bundle does not
// allow and a plain Secret is refused with file and line, and neither the Secret's value nor the
// kubeconfig's token is in any API response, log line, plan, CLI output, the status the hub keeps
// or the status branch's commits.
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { CoreV1Api, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import t, { type Test } from "tap";
import { KubernetesRuntime, kubernetesDryRun } from "../../../operators/agent/runtimes/kubernetes/index.ts";
import type { Bundle, BundleRelease } from "../../../operators/api/index.ts";
import { runAgentlessClusters } from "../../../operators/cli/agentless.ts";
import { statusBranchPath } from "../../../operators/feedback/index.ts";
import {
  createTunnelDryRunner,
  liveFromStore,
  planTree,
  renderPlanMarkdown,
} from "../../../operators/feedback/plan/index.ts";
import { repoRefFromUrl } from "../../../operators/feedback/providers/index.ts";
import type { Hub } from "../../../operators/hub/hub.ts";
import { jsonLogger } from "../../../operators/lib/logger.ts";
import { clusterKubeconfigContext, sealValue } from "../../../operators/lib/seal/index.ts";
import { DRY_RUN_PURPOSE, MAX_DRY_RUN_ANSWER_BYTES } from "../../../operators/lib/tunnel/index.ts";
import { startGitHubStandIn } from "../../feedback/providers/github-stand-in.ts";
import { startAgentOnHub } from "../../helpers/agent-on-hub.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { createGitServer } from "../../helpers/git-server.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { rlark } from "../../helpers/rlark-cli.ts";
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
    const git = await createGitServer();
    t.teardown(() => git.close());
    const github = await startGitHubStandIn(repoRefFromUrl(git.fileUrl));
    t.teardown(() => github.close());
    const work = await mkdtemp(path.join(tmpdir(), "rlark-bundle-two-"));
    t.teardown(() => rm(work, { recursive: true, force: true }));
    const githubToken = path.join(work, "github-token");
    await writeFile(githubToken, "ghs_bundletoken0123456789\n", { mode: 0o600 });
    const { hub, dataDir } = await startHubOnGit(t, {
      git,
      files: { "placeholder.yaml": "# nothing yet\n" },
      selfHeal: false,
      logger,
      statusBranch: "rlark-status",
      statusDebounceMs: 200,
      feedback: {
        provider: { kind: "github", apiUrl: github.url, tokenFile: githubToken },
        pollIntervalMs: 0,
      },
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
    const first = await git.commit({
      "clusters.yaml": clusters(sealed),
      "bundle.yaml": bundle(namespace),
      ...files,
    });
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
    await startAgentOnHub(t, hub, "edge", {
      runtime,
      runtimeKind: "kubernetes",
      reportIntervalMs: 500,
      dryRun: kubernetesDryRun(edge.kubeConfig, namespace, (object) => runtime.checkSchema(object)),
    });

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

    // The status branch: status/bundle/site.yaml with each cluster's revision, phase and objects.
    const statusYaml = await waitFor(
      "the Bundle's status on the status branch",
      async () => {
        const text = await git
          .gitBare("show", `rlark-status:${statusBranchPath("status/bundle/site.yaml")}`)
          .catch(() => "");
        return /cluster: edge/.test(text) && /cluster: lab/.test(text) && !/Pending|Progressing/.test(text)
          ? text
          : undefined;
      },
      onKube,
    );
    t.match(statusYaml, /phase: Ready/);
    t.match(statusYaml, new RegExp(`revision: ${first}`));
    t.equal((statusYaml.match(/health: Healthy/g) ?? []).length, 4, "two objects on each of two clusters");
    // The rlark/sync commit status counts the Bundle's objects.
    await waitFor(
      "the sync status",
      async () => github.status(first, "rlark/sync")?.state === "success" || undefined,
      onKube,
    );
    t.match(
      github.status(first, "rlark/sync")?.description,
      /; Bundle objects: 2 created, 0 changed, 0 deleted$/,
    );

    // The connectivity test on demand: the agentless cluster's, through the admin route.
    const before = (await hub.store.get("Cluster", undefined, "lab"))?.status as { lastTestedAt?: string };
    const tested = await rlark(["cluster", "test", "lab", "--hub", hub.url, "--token", hub.adminToken]);
    t.equal(tested.code, 0, tested.stderr);
    t.match(tested.stdout, /^lab: the API answered at \S+ \(Kubernetes v1\./);
    const after = (await hub.store.get("Cluster", undefined, "lab"))?.status as { lastTestedAt?: string };
    t.ok((after.lastTestedAt ?? "") >= (before.lastTestedAt ?? ""), "the Cluster's status says when");
    const notAgentless = await rlark([
      "cluster",
      "test",
      "edge",
      "--hub",
      hub.url,
      "--token",
      hub.adminToken,
    ]);
    t.equal(notAgentless.code, 2);
    t.match(notAgentless.stderr, /HTTP 409 Cluster "edge" is not agentless/);
    const cliOutput = [tested.stdout, tested.stderr, notAgentless.stdout, notAgentless.stderr].join("\n");

    // The plan of a change, against both live clusters, through their agents' dry-runs.
    const foreign = `foreign${randomBytes(2).toString("hex")}`;
    await edgeCore.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: foreign }, data: { a: "b" } },
    });
    const revision = path.join(work, "revision");
    const planned: Record<string, string> = {
      "clusters.yaml": clusters(sealed),
      "bundle.yaml": bundle(namespace),
      "site/settings.yaml": files["site/settings.yaml"].replace("level: info", "level: warn"),
      "site/service.yaml": files["site/service.yaml"].replace("port: 80", "port: 3200"),
      "site/foreign.yaml": `apiVersion: v1\nkind: ConfigMap\nmetadata: { name: ${foreign} }\ndata: { a: c }\n`,
    };
    for (const [file, text] of Object.entries(planned)) {
      await mkdir(path.dirname(path.join(revision, file)), { recursive: true });
      await writeFile(path.join(revision, file), text);
    }
    const plan = await planTree({
      dir: revision,
      revision: "review",
      live: await liveFromStore(hub.store),
      against: "the live state",
      dryRunner: createTunnelDryRunner({
        request: (cluster, body) =>
          hub.tunnel.request(cluster, DRY_RUN_PURPOSE, body, { maxResponseBytes: MAX_DRY_RUN_ANSWER_BYTES }),
      }),
    });
    t.ok(plan.valid, JSON.stringify(plan.errors));
    const row = (cluster: string, object: string) =>
      plan.bundles.find((b) => b.cluster === cluster && b.object === object);
    t.same(
      plan.bundles.map((b) => [b.cluster, b.object, b.state]),
      [
        ["edge", `ConfigMap/${namespace}/${foreign}`, "failed"],
        ["edge", `ConfigMap/${namespace}/settings`, "change"],
        ["edge", `Service/${namespace}/site`, "change"],
        ["lab", `ConfigMap/${namespace}/${foreign}`, "create"],
        ["lab", `ConfigMap/${namespace}/settings`, "change"],
        ["lab", `Service/${namespace}/site`, "change"],
      ],
    );
    t.match(row("edge", `ConfigMap/${namespace}/${foreign}`)?.message, /was not created by Bundle "site"/);
    for (const cluster of ["lab", "edge"]) {
      const service = row(cluster, `Service/${namespace}/site`)?.diff ?? "";
      t.match(service, /^- {4}- port: 80$/m, `${cluster}: the old port goes`);
      t.match(service, /^\+ {4}- port: 3200$/m, `${cluster}: the new one comes`);
      t.notMatch(service, /^ {5}- port: /m, `${cluster}: no second port entry stays`);
      t.match(
        row(cluster, `ConfigMap/${namespace}/settings`)?.diff,
        /^- {2}level: info\n\+ {2}level: warn$/m,
      );
    }
    const comment = renderPlanMarkdown(plan);
    t.match(comment, /#### Bundles against the live clusters/);
    t.equal(
      (await edgeCore.readNamespacedService({ name: "site", namespace })).spec?.ports
        ?.map((p) => p.port)
        .join(),
      "80",
      "a dry-run changes nothing",
    );
    t.equal((await edgeCore.readNamespacedConfigMap({ name: foreign, namespace })).data?.a, "b");
    await t.rejects(labCore.readNamespacedConfigMap({ name: foreign, namespace }), "nothing created either");

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
    const statusHistory = await git.gitBare("log", "rlark-status", "-p");
    t.match(statusHistory, /status\/bundle\/site\.yaml/, "the scan read the status branch");
    const kept = JSON.stringify([
      ...(await hub.store.list("Bundle")).items,
      ...(await hub.store.list("BundleRelease")).items,
    ]);
    const tokenSecret = token.split(".")[2] ?? token;
    for (const [what, text] of [
      ["API responses", responses.join("\n")],
      ["log lines", lines.join("")],
      ["the store's Bundles and releases", kept],
      ["the status branch's commits", statusHistory],
      ["the plan", comment],
      ["the CLI's output", cliOutput],
    ] as const) {
      t.notOk(text.includes(value), `no Secret value in ${what}`);
      t.notOk(text.includes(tokenSecret), `no kubeconfig token in ${what}`);
    }
    t.ok(lines.join("").includes("bundle drift"), "the drift was logged");
  },
);
