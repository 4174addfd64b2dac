// fleet/nodeserver (the kustomize base) and its catalog entry fleet/addons/rlark-nodeserver/0.1.0:
// the same objects, which pass a server-side dry-run, roll out on the kwok nodes of a fleet
// cluster, and whose ServiceAccount may read the Secret rlark-domain-peers and nothing else.
// The catalog entry is rendered here by a textual substitution of its defaults, standing in for
// the addon renderer that is built in parallel (contract A).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  AppsV1Api,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  type V1DaemonSet,
} from "@kubernetes/client-node";
import t from "tap";
import { repoRoot } from "../../../hack/kube/paths.ts";
import { toolPath } from "../../../hack/tools/paths.ts";
import { fleetCluster } from "../../helpers/fleet.ts";
import {
  type Access,
  allowed,
  applyAll,
  deleteAll,
  impersonating,
  parseObjects,
  run,
} from "../../helpers/install.ts";
import { waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc } = fleetCluster(0);
const NODESERVER_USER = "system:serviceaccount:rlark-system:rlark-nodeserver";
const entryDir = join(repoRoot, "fleet/addons/rlark-nodeserver/0.1.0");

const base = (): KubernetesObject[] =>
  parseObjects(run(toolPath("kustomize"), ["build", join(repoRoot, "fleet/nodeserver")]));

/** The catalog entry with its defaults, as contract A describes the substitution. */
function catalogDefaults(): KubernetesObject[] {
  const schema = JSON.parse(readFileSync(join(entryDir, "values.schema.json"), "utf8")) as {
    properties: Record<string, { default?: unknown }>;
  };
  const value = (path: string): unknown => {
    if (path === "addon.namespace") return "rlark-system";
    const found = schema.properties[path.replace(/^values\./, "")]?.default;
    if (found === undefined) throw new Error(`no default for ${path}`);
    return found;
  };
  const files = readdirSync(join(entryDir, "manifests")).sort();
  const text = files
    .map((f) => readFileSync(join(entryDir, "manifests", f), "utf8"))
    .join("\n---\n")
    // a scalar that is exactly one reference takes the value's own type
    .replace(/"\{\{ ([a-z.]+) \}\}"/gi, (_m, path: string) => JSON.stringify(value(path)))
    .replace(/\{\{ ([a-z.]+) \}\}/gi, (_m, path: string) => String(value(path)));
  return parseObjects(text);
}

const byKindName = (objects: KubernetesObject[]) =>
  Object.fromEntries(objects.map((o) => [`${o.kind}/${o.metadata?.name}`, o]));

t.test("the catalog entry with its defaults is the kustomize base", async (t) => {
  const rendered = catalogDefaults();
  for (const o of rendered) {
    // an empty nodeSelector (the default: every node) is the base's absent one
    const pod = (o as V1DaemonSet).spec?.template?.spec;
    if (pod?.nodeSelector && Object.keys(pod.nodeSelector).length === 0) delete pod.nodeSelector;
  }
  t.same(byKindName(rendered), byKindName(base()));
  t.same(
    base()
      .map((o) => o.kind)
      .sort(),
    ["DaemonSet", "Role", "RoleBinding", "ServiceAccount"],
  );
  const ds = base().find((o) => o.kind === "DaemonSet") as V1DaemonSet;
  const pod = ds.spec?.template.spec;
  t.equal(pod?.hostNetwork, true, "in the host's network");
  t.same(pod?.tolerations, [{ operator: "Exists" }], "on every node, tainted ones too");
  t.same(pod?.volumes?.[0]?.hostPath, { path: "/var/run/rlark", type: "DirectoryOrCreate" });
  t.same(pod?.containers[0]?.args, [
    "nodeserver",
    "--socket-dir=/var/run/rlark",
    "--peers-secret=rlark-system/rlark-domain-peers",
    "--stats-listen=0.0.0.0:5701",
    "--group-listen=0.0.0.0:7946",
    "--group-advertise=$(RLARK_HOST_IP):7946",
    "--data-engine=go",
  ]);
  t.equal(pod?.containers[0]?.image, "rlark/sidecar:0.1.0", "the image that carries rlark-net");
  t.same(
    pod?.containers[0]?.env?.find((e) => e.name === "RLARK_HOST_IP")?.valueFrom,
    { fieldRef: { fieldPath: "status.hostIP" } },
    "the AgentGroup member advertises the node's address",
  );
  t.same(
    pod?.containers[0]?.ports?.find((p) => p.name === "group"),
    { name: "group", containerPort: 7946, protocol: "UDP" },
    "on UDP 7946",
  );
});

t.test("the DaemonSet passes a server-side dry-run and rolls out on the kwok nodes", async (t) => {
  const objects = base();
  const api = KubernetesObjectApi.makeApiClient(kc);
  // rlark-system comes with fleet/agent; the test makes sure it is there
  await applyAll(kc, [{ apiVersion: "v1", kind: "Namespace", metadata: { name: "rlark-system" } }]);
  for (const o of [...objects, ...catalogDefaults()])
    await api.patch(o, undefined, "All", "rlark-test", true, PatchStrategy.ServerSideApply);
  t.pass("every object of the base and of the catalog entry passes a server-side dry-run");
  t.teardown(() => deleteAll(kc, objects));
  await applyAll(kc, objects);
  const apps = kc.makeApiClient(AppsV1Api);
  const status = await waitFor(
    "DaemonSet rlark-system/rlark-nodeserver rolled out",
    async () => {
      const ds = await apps.readNamespacedDaemonSet({ name: "rlark-nodeserver", namespace: "rlark-system" });
      const s = ds.status;
      const current = (s?.observedGeneration ?? 0) >= (ds.metadata?.generation ?? 1);
      return current &&
        s &&
        s.desiredNumberScheduled > 0 &&
        s.numberReady === s.desiredNumberScheduled &&
        s.updatedNumberScheduled === s.desiredNumberScheduled
        ? s
        : undefined;
    },
    { attempts: 480, everyMs: 250 },
  );
  t.ok(status.desiredNumberScheduled >= 3, `a nodeserver on every node (${status.desiredNumberScheduled})`);
});

t.test("the nodeserver's ServiceAccount may read rlark-domain-peers and nothing else", async (t) => {
  const rbac = base().filter((o) => o.kind !== "DaemonSet");
  t.teardown(() => deleteAll(kc, rbac));
  await applyAll(kc, rbac);
  const as = impersonating(kc, NODESERVER_USER);
  const peers = { resource: "secrets", namespace: "rlark-system", name: "rlark-domain-peers" };
  const may: Access[] = ["get", "list", "watch"].map((verb) => ({ verb, ...peers }));
  const mayNot: Access[] = [
    { verb: "patch", ...peers },
    { verb: "delete", ...peers },
    { verb: "list", resource: "secrets", namespace: "rlark-system" },
    { verb: "get", resource: "secrets", namespace: "rlark-system", name: "rlark-agent-identity" },
    { verb: "get", resource: "secrets", namespace: "default", name: "rlark-domain-peers" },
    { verb: "list", resource: "pods" },
    { verb: "create", resource: "pods", namespace: "rlark-system" },
  ];
  for (const a of may) t.ok(await allowed(as, a), `allowed: ${a.verb} ${a.resource} ${a.name ?? ""}`);
  for (const a of mayNot)
    t.notOk(await allowed(as, a), `refused: ${a.verb} ${a.resource} ${a.namespace ?? ""}/${a.name ?? ""}`);
});
