// Addons that ship RBAC, installed by a kubernetes-runtime agent running with exactly the rights
// fleet/agent grants (a token of its ServiceAccount, not an admin's: docs/adr/0009-addon-rbac.md):
// the fixture addon "demo" (a ClusterRole, a ClusterRoleBinding, a ServiceAccount, workloads)
// goes to Ready and uninstalls; every object of the shipped catalog passes a server-side dry-run
// as the agent; and what the agent must not do is refused by the API server itself (RBAC's
// escalation check and the ValidatingAdmissionPolicy), not merely absent from a review.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  ApiException,
  CoreV1Api,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  RbacAuthorizationV1Api,
} from "@kubernetes/client-node";
import t from "tap";
import YAML from "yaml";
import { repoRoot } from "../../../hack/kube/paths.ts";
import type { Addon, Cluster } from "../../../operators/api/index.ts";
import { catalogFiles } from "../../helpers/addon-catalog-files.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { applyAll, asAgentServiceAccount, parseObjects } from "../../helpers/install.ts";
import { demoAddonYaml } from "../../helpers/job-yaml.ts";
import { startKubernetesAgentOnHub } from "../../helpers/kubernetes-agent-on-hub.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc } = fleetCluster(0);
const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
const MANAGED = { "rlark.io/managed-by": "rlark-addon" };

/** fleet/agent's objects but its Deployment: what `kubectl apply -k fleet/agent` grants. */
function agentRbac(): KubernetesObject[] {
  const base = join(repoRoot, "fleet/agent");
  const { resources } = YAML.parse(readFileSync(join(base, "kustomization.yaml"), "utf8")) as {
    resources: string[];
  };
  return resources
    .flatMap((file) => parseObjects(readFileSync(join(base, file), "utf8")))
    .filter((o) => o.kind !== "Deployment");
}

/** The HTTP status the API server answers a server-side dry-run apply of `object` with, as `as`. */
async function dryRun(as: KubeConfig, object: KubernetesObject): Promise<{ code: number; body: string }> {
  return KubernetesObjectApi.makeApiClient(as)
    .patch(object, undefined, "All", "rlark-addon", true, PatchStrategy.ServerSideApply)
    .then(() => ({ code: 200, body: "" }))
    .catch((err: unknown) =>
      err instanceof ApiException
        ? { code: err.code, body: String(err.body) }
        : { code: -1, body: String(err) },
    );
}

t.test("an Addon with RBAC installs and uninstalls under the agent's own rights", async (t) => {
  await applyAll(kc, agentRbac());
  const agentKc = await asAgentServiceAccount(kc);
  const namespace = await testNamespace(t, kc, "addon-rbac");
  const agentNamespace = await testNamespace(t, kc, "addon-rbac-agent");
  t.teardown(async () => {
    await rbac.deleteClusterRole({ name: `${namespace}-demo` }).catch(() => undefined);
    await rbac.deleteClusterRoleBinding({ name: `${namespace}-demo` }).catch(() => undefined);
  });
  const { git, hub } = await startHubOnGit(t, {
    files: {
      ...catalogFiles(),
      "clusters.yaml":
        "apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: edge\nspec:\n  runtime: kubernetes\n",
      "addon.yaml": demoAddonYaml(namespace),
    },
  });
  t.same((await hub.source?.watcher.trigger())?.errors, [], "the repository is valid");
  await startKubernetesAgentOnHub(t, hub, "edge", {
    kubeConfig: agentKc,
    namespace: agentNamespace,
    reportIntervalMs: 1_000,
  });
  const addon = () => hub.store.get<Addon>("Addon", "agent-edge", "demo");
  const ready = await waitFor(
    "the Addon Ready (or Failed)",
    async () => {
      const a = await addon();
      return a?.status?.phase === "Ready" || a?.status?.phase === "Failed" ? a : undefined;
    },
    onKube,
  );
  t.equal(ready.status?.phase, "Ready", `Ready, not Failed: ${ready.status?.message ?? ""}`);
  const role = await rbac.readClusterRole({ name: `${namespace}-demo` });
  t.same(role.rules?.[0]?.resources, ["nodes"], "its ClusterRole is there");
  const binding = await rbac.readClusterRoleBinding({ name: `${namespace}-demo` });
  t.same(
    binding.subjects,
    [{ kind: "ServiceAccount", name: "demo", namespace }],
    "bound to its ServiceAccount",
  );
  await kc.makeApiClient(CoreV1Api).readNamespacedServiceAccount({ name: "demo", namespace });
  // Without fleet/agent-sealed-secrets the agent may not list Secrets; with no SealedSecret for
  // the cluster that is no fault of its runtime.
  const runtime = await waitFor(
    "the agent's runtime capability reported",
    async () =>
      (await hub.store.get<Cluster>("Cluster", undefined, "edge"))?.status?.capabilities?.find(
        (c) => c.name === "runtime/kubernetes" && c.health !== "STARTING",
      ),
    onKube,
  );
  t.equal(
    runtime.health,
    "READY",
    `the runtime is READY under the agent's own rights: ${runtime.message ?? ""}`,
  );

  await git.commit({ "addon.yaml": null });
  await hub.source?.watcher.trigger();
  await waitFor(
    "the ClusterRole and ClusterRoleBinding deleted by the agent",
    async () => {
      const left = await Promise.all([
        rbac.readClusterRole({ name: `${namespace}-demo` }).then(
          () => true,
          () => false,
        ),
        rbac.readClusterRoleBinding({ name: `${namespace}-demo` }).then(
          () => true,
          () => false,
        ),
      ]);
      return left.some(Boolean) ? undefined : true;
    },
    onKube,
  );
  t.pass("uninstalled: the agent deleted what it had installed");
});

t.test("every object of the shipped catalog passes a server-side dry-run as the agent", async (t) => {
  await applyAll(kc, agentRbac());
  const agentKc = await asAgentServiceAccount(kc);
  for (const addon of ["embodied-runtime", "rlark-nodeserver"]) {
    const objects = parseObjects(
      readFileSync(join(repoRoot, "fleet/addons-rendered", addon, "objects.yaml"), "utf8"),
    );
    t.ok(
      objects.some((o) => o.kind === "Role" || o.kind === "ClusterRole"),
      `${addon} ships RBAC`,
    );
    // A binding is checked against the role it names, which a dry run does not create: the
    // roles are applied for real, as the agent, when missing, and deleted again afterwards.
    const api = KubernetesObjectApi.makeApiClient(agentKc);
    for (const role of objects.filter((o) => o.kind === "Role" || o.kind === "ClusterRole")) {
      const exists = await KubernetesObjectApi.makeApiClient(kc)
        .read({ ...role, metadata: { name: role.metadata?.name ?? "", namespace: role.metadata?.namespace } })
        .then(
          () => true,
          () => false,
        );
      if (exists) continue;
      await api.patch(role, undefined, undefined, "rlark-addon", true, PatchStrategy.ServerSideApply);
      t.teardown(() => api.delete(role).catch(() => undefined));
    }
    for (const object of objects) {
      const { code, body } = await dryRun(agentKc, object);
      t.equal(code, 200, `${addon}: ${object.kind}/${object.metadata?.name} ${body}`);
    }
  }
});

t.test("the agent still cannot do what it should not", async (t) => {
  await applyAll(kc, agentRbac());
  const agentKc = await asAgentServiceAccount(kc);
  const namespace = await testNamespace(t, kc, "addon-rbac-deny");
  const theirs = `${namespace}-theirs`;
  await rbac.createClusterRole({ body: { metadata: { name: theirs }, rules: [] } });
  t.teardown(() => rbac.deleteClusterRole({ name: theirs }).catch(() => undefined));
  const rbacObject = (kind: string, name: string, rest: Record<string, unknown>) => ({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind,
    metadata: { name, labels: MANAGED },
    ...rest,
  });

  const toClusterAdmin = await dryRun(
    agentKc,
    rbacObject("ClusterRoleBinding", `${namespace}-admin`, {
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
      subjects: [{ kind: "ServiceAccount", name: "rlark-agent", namespace: "rlark-system" }],
    }),
  );
  t.equal(toClusterAdmin.code, 403, "a ClusterRoleBinding to cluster-admin is refused");
  t.match(toClusterAdmin.body, /attempting to grant RBAC permissions not currently held/);

  const readSecrets = await dryRun(
    agentKc,
    rbacObject("ClusterRole", `${namespace}-secrets`, {
      rules: [{ apiGroups: [""], resources: ["secrets"], verbs: ["get", "list"] }],
    }),
  );
  t.equal(readSecrets.code, 403, "a ClusterRole reading Secrets (which it may not) is refused");

  const webhook = await dryRun(agentKc, {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "MutatingWebhookConfiguration",
    metadata: { name: `${namespace}-hook`, labels: MANAGED },
  } as KubernetesObject);
  t.equal(webhook.code, 403, "a MutatingWebhookConfiguration other than the device webhook's is refused");

  const takeover = await dryRun(agentKc, rbacObject("ClusterRole", theirs, { rules: [] }));
  t.equal(takeover.code, 403, "a ClusterRole an addon did not install cannot be taken over by labelling it");
  t.match(takeover.body, /changes only objects an Addon installed/);

  const api = KubernetesObjectApi.makeApiClient(agentKc);
  const deleted = await api
    .delete(
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        metadata: { name: "cluster-admin" },
      },
      undefined,
      "All",
    )
    .then(() => 200)
    .catch((err: unknown) => (err instanceof ApiException ? err.code : -1));
  t.equal(deleted, 403, "cluster-admin's ClusterRoleBinding cannot be deleted (dry run)");
  const defaultAccount = await api
    .delete(
      { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "default", namespace } },
      undefined,
      "All",
    )
    .then(() => 200)
    .catch((err: unknown) => (err instanceof ApiException ? err.code : -1));
  t.equal(defaultAccount, 403, "nor a namespace's default ServiceAccount");

  const core = agentKc.makeApiClient(CoreV1Api);
  const secrets = await core
    .listNamespacedSecret({ namespace })
    .then(() => 200)
    .catch((err: unknown) => (err instanceof ApiException ? err.code : -1));
  t.equal(secrets, 403, "it reads no Secrets in other namespaces");
  const peers = await core
    .listNamespacedSecret({ namespace: "rlark-system" })
    .then(() => 200)
    .catch((err: unknown) => (err instanceof ApiException ? err.code : -1));
  t.equal(peers, 403, "nor lists those of its own namespace (only rlark-domain-peers, by name)");
});
