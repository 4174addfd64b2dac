// An agentless cluster (spec.access: kubeconfig): a hack/kube cluster's kubeconfig, with a
// ServiceAccount token of its own, sealed to the hub's key and committed as a Cluster; the hub's
// AgentlessClusters drive it with the kubernetes runtime in-process. A Job runs there without any
// agent installed, its Task reaches Running on kwok, the Cluster's connectivity status is set, and
// neither the kubeconfig nor its token appears in a response, a log line or git; its StorageClasses
// are served. Removing the Cluster stops driving it.

import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { CoreV1Api, RbacAuthorizationV1Api, StorageV1Api } from "@kubernetes/client-node";
import t, { type Test } from "tap";
import { runAgentlessClusters } from "../../../operators/cli/agentless.ts";
import { jsonLogger } from "../../../operators/lib/logger.ts";
import { clusterKubeconfigContext, sealValue } from "../../../operators/lib/seal/index.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { jobYaml, trainerTaskYaml } from "../../helpers/job-yaml.ts";
import { rlark } from "../../helpers/rlark-cli.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const fleet = fleetCluster(0);
const kc = fleet.kubeConfig;
const core = kc.makeApiClient(CoreV1Api);
const rbac = kc.makeApiClient(RbacAuthorizationV1Api);

/** A ServiceAccount token (bound to cluster-admin unless `bound` is false): a credential the test must never see again. */
async function serviceAccountToken(t: Test, namespace: string, name = "hub", bound = true): Promise<string> {
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  if (bound) await bindClusterAdmin(t, namespace, name);
  const request = await core.createNamespacedServiceAccountToken({
    name,
    namespace,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const token = request.status?.token;
  if (!token) throw new Error("no token");
  return token;
}

async function bindClusterAdmin(t: Test, namespace: string, name: string): Promise<void> {
  const binding = `${namespace}-${name}`;
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: binding, labels: { "rlark.io/test": "true" } },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
      subjects: [{ kind: "ServiceAccount", name, namespace }],
    },
  });
  t.teardown(() => rbac.deleteClusterRoleBinding({ name: binding }).catch(() => undefined));
}

/** The fleet cluster's kubeconfig with `token`: where the token goes is sealed with it. */
function kubeconfigText(token: string): string {
  const caData = kc.getCurrentCluster()?.caData;
  return `apiVersion: v1
kind: Config
clusters:
  - name: lab
    cluster:
      server: ${fleet.server}
      certificate-authority-data: ${caData}
users:
  - name: lab-hub
    user:
      token: ${token}
contexts:
  - name: lab
    context: { cluster: lab, user: lab-hub }
current-context: lab
`;
}

function clusterYaml(name: string, sealed: string): string {
  return `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata:
  name: ${name}
  labels: { access: kubeconfig }
spec:
  runtime: kubernetes
  access: kubeconfig
  kubeconfig:
    sealed: "${sealed}"
`;
}

const PLACEHOLDER = {
  "clusters/bench.yaml": `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata: { name: bench }
spec: { runtime: process }
`,
};

t.test("a sealed kubeconfig lets the hub run a Job on a cluster without an agent", async (t) => {
  const namespace = await testNamespace(t, kc, "agentless");
  const token = await serviceAccountToken(t, namespace);
  const kubeconfig = kubeconfigText(token);
  const { git, hub, dataDir } = await startHubOnGit(t, {
    files: PLACEHOLDER,
    dashboard: true,
    statusBranch: "rlark-status",
    statusDebounceMs: 200,
  });
  const logged = new PassThrough();
  const lines: string[] = [];
  logged.on("data", (chunk: Buffer) => lines.push(chunk.toString()));
  // composed with the hub as rlark hub and rlark up compose it
  const run = await runAgentlessClusters(hub, dataDir, jsonLogger("agentless", logged), {
    retryIntervalMs: 500,
    reportIntervalMs: 500,
    runtime: { instance: `lab${namespace.slice(-8)}`, defaultNamespace: namespace, retryIntervalMs: 500 },
  });
  t.teardown(() => run.stop());

  // sealed as a user does: rlark seal, with the public key fetched from the hub
  const dir = await mkdtemp(path.join(tmpdir(), "rlark-agentless-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(path.join(dir, "lab.kubeconfig"), kubeconfig, { mode: 0o600 });
  const seal = await rlark([
    "seal",
    "--hub-key",
    hub.url,
    "--token",
    hub.adminToken,
    "--kubeconfig",
    path.join(dir, "lab.kubeconfig"),
    "--cluster",
    "lab",
  ]);
  t.equal(seal.code, 0, seal.stderr);
  const sealed = seal.stdout.trim();
  t.notOk(seal.stdout.includes(token.split(".")[2] ?? token), "the sealed text holds no token");
  // the same kubeconfig sealed for another Cluster: copied here, it must not open
  const misplaced = sealValue(
    kubeconfig,
    hub.sealKeys.currentPublicKeyPem(),
    clusterKubeconfigContext("other"),
  );
  const noRights = await serviceAccountToken(t, namespace, "norights", false);
  await git.commit({
    "clusters/lab.yaml": clusterYaml("lab", sealed),
    "clusters/copied.yaml": clusterYaml("copied", misplaced),
    "clusters/norights.yaml": clusterYaml(
      "norights",
      sealValue(
        kubeconfigText(noRights),
        hub.sealKeys.currentPublicKeyPem(),
        clusterKubeconfigContext("norights"),
      ),
    ),
    "jobs/train.yaml": jobYaml("train", [
      trainerTaskYaml({
        namespace,
        replicas: 1,
        resources: `{ requests: { cpu: "1" } }`,
      }),
    ]),
  });

  const status = async (name: string) =>
    (await hub.store.get("Cluster", undefined, name))?.status as Record<string, unknown> | undefined;
  const running = await waitFor(
    "the Task Running on the agentless cluster",
    async () => {
      const task = await hub.store.get("Task", "agent-lab", "train-trainer");
      return (task?.status as { phase?: string } | undefined)?.phase === "Running" ? task : undefined;
    },
    { attempts: 480, everyMs: 250 },
  );
  t.ok(running, "the hub ran the Job there with no agent installed");
  const lab = await waitFor(
    "the cluster's status",
    async () => {
      const s = await status("lab");
      return s?.phase === "Online" && s.lastTestOk === true && s.nodeCount !== undefined ? s : undefined;
    },
    onKube,
  );
  t.match(lab.kubernetesVersion, /^v1\./, "the Version API answered");
  t.equal(lab.nodeCount, (await core.listNode()).items.length);
  // Its StorageClasses are served as a cluster's with an agent are (another test may add one meanwhile).
  const storage = kc.makeApiClient(StorageV1Api);
  const className = `rlark-test-${namespace}`;
  await storage.createStorageClass({
    body: {
      metadata: { name: className, labels: { "rlark.io/test": "true" } },
      provisioner: "example.com/nfs",
    },
  });
  t.teardown(() => storage.deleteStorageClass({ name: className }).catch(() => undefined));
  const classes = await waitFor(
    "the cluster's StorageClasses served",
    async () => {
      const live = (await storage.listStorageClass()).items.map((c) => c.metadata?.name).sort();
      const res = await fetch(`${hub.url}/api/v1/storage/storageclass?clusters=lab`, {
        headers: { authorization: `Bearer ${hub.adminToken}` },
      });
      const served = ((await res.json()) as { items: { cluster: string; name: string }[] }).items;
      return res.status === 200 && JSON.stringify(served.map((c) => c.name)) === JSON.stringify(live)
        ? served
        : undefined;
    },
    onKube,
  );
  t.ok(
    classes.some((c) => c.name === className),
    "one made there now included",
  );
  t.ok(
    classes.every((c) => c.cluster === "lab"),
    "each named with its cluster",
  );
  const copied = await waitFor(
    "the copied Cluster's failed test",
    async () => {
      const s = await status("copied");
      return s?.lastTestOk === false ? s : undefined;
    },
    onKube,
  );
  t.match(copied.lastTestMessage, /does not open with this hub's keys/);
  const norights = await waitFor(
    "the test of a Cluster whose user has no rights",
    async () => {
      const s = await status("norights");
      return s?.lastTestOk === false ? s : undefined;
    },
    onKube,
  );
  t.match(norights.lastTestMessage, /cannot be driven: .*forbidden/i, "RBAC's refusal, said");
  t.same(run.clusters(), ["lab"], "only the Cluster whose kubeconfig opens is driven");

  // Nothing of the kubeconfig, anywhere
  const responses: string[] = [];
  for (const route of [
    "/api/v1/rlinf.io/v1alpha1/clusters",
    "/api/v1/rlinf.io/v1alpha1/clusters/lab",
    "/api/v1/rlinf.io/v1alpha1/tasks?namespace=agent-lab",
    `/api/v1/clusters/lab/browse/secrets?namespace=${namespace}`,
    `/api/v1/clusters/lab/browse/deployments?namespace=${namespace}`,
  ]) {
    const res = await fetch(`${hub.url}${route}`, { headers: { authorization: `Bearer ${hub.adminToken}` } });
    t.equal(res.status, 200, route);
    responses.push(await res.text());
  }
  await waitFor(
    "the agentless cluster's status on the status branch",
    async () =>
      (await git.gitBare("log", "rlark-status", "-p").catch(() => "")).includes("kubernetesVersion") ||
      undefined,
    onKube,
  );
  const history = await git.gitBare("log", "--all", "-p");
  const tokenPart = token.split(".")[2] ?? token;
  const noRightsPart = noRights.split(".")[2] ?? noRights;
  for (const [where, text] of [
    ["API responses", responses.join("\n")],
    ["logs", lines.join("")],
    ["git (main and status branches)", history],
  ] as const) {
    t.notOk(text.includes(tokenPart) || text.includes(noRightsPart), `no token in the ${where}`);
    t.notOk(text.includes("current-context"), `no kubeconfig in the ${where}`);
  }
  t.ok(lines.length > 0, "the scan read log lines");

  // A rotated kubeconfig is tested on change: a revoked token fails the test and stops the
  // driving; the new one is driven again
  const revoked = kubeconfigText(`${token.slice(0, -4)}AAAA`);
  await git.commit({
    "clusters/lab.yaml": clusterYaml(
      "lab",
      sealValue(revoked, hub.sealKeys.currentPublicKeyPem(), clusterKubeconfigContext("lab")),
    ),
  });
  const refused = await waitFor(
    "the changed kubeconfig tested",
    async () => {
      const s = await status("lab");
      return s?.lastTestOk === false ? s : undefined;
    },
    onKube,
  );
  t.match(refused.lastTestMessage, /^\/version: 401/, "the API server's refusal, in one line");
  t.same(run.clusters(), [], "a kubeconfig that fails its test is not driven");
  const rotated = await serviceAccountToken(t, namespace, "hub-rotated");
  await git.commit({
    "clusters/lab.yaml": clusterYaml(
      "lab",
      sealValue(kubeconfigText(rotated), hub.sealKeys.currentPublicKeyPem(), clusterKubeconfigContext("lab")),
    ),
  });
  await waitFor(
    "driven again with the new kubeconfig",
    async () => run.clusters().includes("lab") || undefined,
    onKube,
  );
  await waitFor(
    "the new kubeconfig tested",
    async () => ((await status("lab"))?.lastTestOk === true ? true : undefined),
    onKube,
  );
  for (const secret of [token, rotated].map((x) => x.split(".")[2] ?? x))
    t.notOk(lines.join("").includes(secret), "no token in the logs after the rotation");

  // Removing the Cluster (and what ran there) stops driving it
  await git.commit({ "clusters/lab.yaml": null, "jobs/train.yaml": null });
  await waitFor("the cluster no longer driven", async () => run.clusters().length === 0 || undefined, onKube);
  await waitFor(
    "its tunnel closed",
    async () => (hub.tunnel.session("lab") === undefined ? true : undefined),
    onKube,
  );
  t.notOk(lines.join("").includes(tokenPart), "no token in the logs after removal either");
});
