// RBAC is enforced: a client holding a ServiceAccount token gets what its Role grants and is
// refused everything else.
import { ApiException, CoreV1Api, KubeConfig, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import t from "tap";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";

const admin = fleetCluster(0);
const kc = admin.kubeConfig;

/** A KubeConfig for the same server that authenticates with a bearer token. */
function tokenKubeConfig(token: string): KubeConfig {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error("the admin kubeconfig has no current cluster");
  const out = new KubeConfig();
  out.loadFromOptions({
    clusters: [{ name: cluster.name, server: cluster.server, caData: cluster.caData, skipTLSVerify: false }],
    users: [{ name: "reader", token }],
    contexts: [{ name: "reader", cluster: cluster.name, user: "reader" }],
    currentContext: "reader",
  });
  return out;
}

async function status(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 200;
  } catch (err) {
    if (err instanceof ApiException) return err.code;
    throw err;
  }
}

t.test("a restricted ServiceAccount token is refused what its Role does not grant", async (t) => {
  const namespace = await testNamespace(t, kc, "rbac");
  const other = await testNamespace(t, kc, "rbac-other");
  const core = kc.makeApiClient(CoreV1Api);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);

  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: "reader" } } });
  await rbac.createNamespacedRole({
    namespace,
    body: {
      metadata: { name: "configmap-reader" },
      rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch"] }],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: "reader" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "configmap-reader" },
      subjects: [{ kind: "ServiceAccount", name: "reader", namespace }],
    },
  });
  await core.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name: "visible" }, data: { a: "1" } },
  });
  await core.createNamespacedSecret({
    namespace,
    body: { metadata: { name: "hidden" }, stringData: { k: "v" } },
  });

  const tokenRequest = await core.createNamespacedServiceAccountToken({
    name: "reader",
    namespace,
    body: { spec: { audiences: [], expirationSeconds: 600 } },
  });
  const token = tokenRequest.status?.token;
  t.ok(token, "the TokenRequest API issues a token");
  const reader = tokenKubeConfig(token!).makeApiClient(CoreV1Api);

  const cms = await reader.listNamespacedConfigMap({ namespace });
  t.ok(
    cms.items.some((c) => c.metadata?.name === "visible"),
    "the Role's grant works: configmaps are listed",
  );
  t.equal(
    (await reader.readNamespacedConfigMap({ name: "visible", namespace })).data?.a,
    "1",
    "a configmap is read",
  );

  t.equal(await status(reader.listNamespacedSecret({ namespace })), 403, "secrets: 403");
  t.equal(await status(reader.readNamespacedSecret({ name: "hidden", namespace })), 403, "a secret: 403");
  t.equal(
    await status(reader.createNamespacedConfigMap({ namespace, body: { metadata: { name: "new" } } })),
    403,
    "creating a configmap (a verb not granted): 403",
  );
  t.equal(
    await status(reader.deleteNamespacedConfigMap({ name: "visible", namespace })),
    403,
    "deleting: 403",
  );
  t.equal(
    await status(reader.listNamespacedConfigMap({ namespace: other })),
    403,
    "configmaps of another namespace: 403",
  );
  t.equal(await status(reader.listNode()), 403, "cluster-scoped nodes: 403");

  const bogus = tokenKubeConfig(`${token!.slice(0, -4)}AAAA`).makeApiClient(CoreV1Api);
  t.equal(await status(bogus.listNamespacedConfigMap({ namespace })), 401, "a tampered token: 401");
});
