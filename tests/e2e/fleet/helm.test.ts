// fleet/helm/rlark, rendered with the pinned helm, applied by server-side apply to a fleet
// cluster: hub and agent roll out on the kwok nodes, the agent's ServiceAccount may do what the
// kubernetes runtime does and no more, the values schema refuses mistakes, and the CA and admin
// token the chart makes are ones the hub's own code opens. Runs on cluster 1 (kustomize.test.ts
// uses 0: both install into rlark-system under the same names).
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CoreV1Api, type KubernetesObject } from "@kubernetes/client-node";
import t from "tap";
import YAML from "yaml";
import { repoRoot } from "../../../hack/kube/paths.ts";
import { toolPath } from "../../../hack/tools/paths.ts";
import { openHubPki } from "../../../operators/hub/tunnel-server.ts";
import { loadOrCreateAdminToken } from "../../../operators/lib/http/index.ts";
import { certificateFingerprint, generateKeyPair } from "../../../operators/lib/pki/index.ts";
import { fleetCluster } from "../../helpers/fleet.ts";
import {
  applyAll,
  type Container,
  checkAgentAccess,
  checkRolledOut,
  checkRunsRlark,
  deleteAll,
  deploymentAvailable,
  isSharedAgentRbac,
  parseObjects,
  run,
  volumeForClaim,
} from "../../helpers/install.ts";

const { kubeConfig: kc, kubeconfig } = fleetCluster(1);
const helm = toolPath("helm");
const chart = join(repoRoot, "fleet/helm/rlark");
const version = (JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { version: string })
  .version;

// helm keeps a cache and config: never the user's
const helmHome = mkdtempSync(join(tmpdir(), "rlark-helm-"));
t.teardown(() => rmSync(helmHome, { recursive: true, force: true }));
const helmEnv = {
  ...process.env,
  HELM_CACHE_HOME: join(helmHome, "cache"),
  HELM_CONFIG_HOME: join(helmHome, "config"),
  HELM_DATA_HOME: join(helmHome, "data"),
};

const VALUES = [
  "hub.repo=https://git.example.com/acme/fleet.git",
  "agent.enabled=true",
  "agent.bootstrap.hub=hub.example.com:2222",
  "agent.bootstrap.token=rlt.test",
  `agent.bootstrap.caHash=sha256:${"ab".repeat(32)}`,
];

function helmTemplate(set: string[] = VALUES, namespace = "rlark-system"): { out: string; error?: string } {
  const args = ["template", "rlark", chart, "--namespace", namespace, ...set.flatMap((v) => ["--set", v])];
  try {
    return { out: run(helm, args, helmEnv) };
  } catch (err) {
    return { out: "", error: (err as Error).message };
  }
}

function rendered(set?: string[]): KubernetesObject[] {
  const { out, error } = helmTemplate(set);
  if (error) throw new Error(error);
  return parseObjects(out);
}

const find = (
  objects: KubernetesObject[],
  kind: string,
  name: string,
): KubernetesObject & Record<string, unknown> => {
  const o = objects.find((x) => x.kind === kind && x.metadata?.name === name);
  if (!o) throw new Error(`the chart renders no ${kind} ${name}`);
  return o as KubernetesObject & Record<string, unknown>;
};

const container = (objects: KubernetesObject[], name: string): Container =>
  (
    find(objects, "Deployment", name) as unknown as {
      spec: { template: { spec: { containers: Container[] } } };
    }
  ).spec.template.spec.containers[0] as Container;

t.test(
  "the chart is at the package's version and runs rlark/hub and rlark/rlark with options rlark has",
  async (t) => {
    const meta = YAML.parse(readFileSync(join(chart, "Chart.yaml"), "utf8")) as {
      version: string;
      appVersion: string;
    };
    t.equal(meta.version, version, "Chart.yaml version");
    t.equal(meta.appVersion, version, "Chart.yaml appVersion");
    const objects = rendered([...VALUES, "agent.sidecar.image=rlark/sidecar:1"]);
    for (const [name, command] of [
      ["rlark-hub", "hub"],
      ["rlark-agent", "agent"],
    ] as const) {
      checkRunsRlark(t, name, command, container(objects, name), version);
    }
    t.ok(
      container(objects, "rlark-agent").args.includes("--sidecar-image=rlark/sidecar:1"),
      "the sidecar reaches the agent",
    );
  },
);

t.test("the chart's agent RBAC is fleet/agent's", async (t) => {
  const objects = rendered();
  for (const [kind, file] of [
    ["ClusterRole", "cluster-role.yaml"],
    ["Role", "role.yaml"],
  ] as const) {
    const base = YAML.parse(readFileSync(join(repoRoot, "fleet/agent", file), "utf8")) as { rules: unknown };
    t.same(find(objects, kind, "rlark-agent").rules, base.rules, `${kind} rlark-agent: the same rules`);
  }
  const addonRbac = ["addon-cluster-role.yaml", "addon-admission-policy.yaml"].flatMap((file) =>
    parseObjects(readFileSync(join(repoRoot, "fleet/agent", file), "utf8")),
  );
  for (const base of addonRbac) {
    const { apiVersion, kind, metadata, ...content } = base as KubernetesObject & Record<string, unknown>;
    const chart = find(objects, kind ?? "", metadata?.name ?? "");
    const { metadata: _m, ...chartContent } = chart;
    t.same(chartContent, { apiVersion, kind, ...content }, `${kind} ${metadata?.name}: the same`);
  }
  const sealedRbac = parseObjects(
    readFileSync(join(repoRoot, "fleet/agent-sealed-secrets/sealed-secrets-rbac.yaml"), "utf8"),
  );
  const withSealed = rendered([...VALUES, "agent.sealedSecrets=true"]);
  for (const base of sealedRbac) {
    const { apiVersion, kind, metadata, ...content } = base as KubernetesObject & Record<string, unknown>;
    const chart = find(withSealed, kind ?? "", metadata?.name ?? "");
    const { metadata: _m, ...chartContent } = chart;
    t.same(chartContent, { apiVersion, kind, ...content }, `${kind} ${metadata?.name}: the same`);
  }
  t.notOk(
    objects.some((o) => o.metadata?.name === "rlark-agent-sealed-secrets"),
    "SealedSecret delivery is off by default",
  );
  const without = rendered([...VALUES, "agent.installAddons=false"]);
  t.notOk(
    without.some((o) => o.metadata?.name === "rlark-agent-addons"),
    "agent.installAddons=false leaves the addon rights out",
  );
});

t.test("values.schema.json and the templates refuse mistakes with the field named", async (t) => {
  t.match(helmTemplate([...VALUES, "hub.repoo=x"]).error, /repoo/, "an unknown key");
  t.match(
    helmTemplate([...VALUES, "hub.service.type=Ingress"]).error,
    /hub.*service.*type|type.*Ingress/s,
    "a wrong enum",
  );
  t.match(
    helmTemplate([...VALUES, "agent.bootstrap.caHash=abc"]).error,
    /caHash/,
    "a CA hash that is not sha256:hex",
  );
  t.match(helmTemplate(VALUES.slice(1)).error, /repo/, "the hub without a repository");
  t.match(
    helmTemplate(VALUES.slice(0, 2)).error,
    /agent\.bootstrap/,
    "the agent without its bootstrap values",
  );
  t.match(helmTemplate(VALUES, "default").error, /rlark-system/, "another namespace");
  t.equal(helmTemplate(["hub.enabled=false"]).error, undefined, "nothing enabled is fine");
  t.equal(
    helmTemplate(VALUES.slice(0, 1), "elsewhere").error,
    undefined,
    "the hub alone in another namespace",
  );
});

t.test("the CA and admin token the chart makes are ones the hub opens as they are", async (t) => {
  const objects = rendered();
  const data = (name: string) =>
    (find(objects, "Secret", name) as unknown as { data: Record<string, string> }).data;
  const decode = (b64: string | undefined) => Buffer.from(b64 ?? "", "base64").toString("utf8");
  const dataDir = mkdtempSync(join(tmpdir(), "rlark-helm-hub-"));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  // laid out as the Deployment mounts them: the token over its file in the data dir, the CA in
  // a folder of its own that the Deployment names in RLARK_CA_DIR
  const deployment = find(objects, "Deployment", "rlark-hub") as unknown as {
    spec: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } };
  };
  const caMount = deployment.spec.template.spec.containers[0]?.env.find(
    (e) => e.name === "RLARK_CA_DIR",
  )?.value;
  t.equal(caMount, "/etc/rlark/ca", "the hub reads its CA from the Secret's folder");
  const caDir = join(dataDir, "ca-secret");
  mkdirSync(caDir);
  const ca = data("rlark-hub-ca");
  writeFileSync(join(caDir, "ca.crt"), decode(ca["ca.crt"]));
  writeFileSync(join(caDir, "ca.key"), decode(ca["ca.key"]));
  const token = decode(data("rlark-hub-admin-token")["admin-token"]);
  writeFileSync(join(dataDir, "admin-token"), token);

  t.equal(await loadOrCreateAdminToken(dataDir), token, "the admin token is used, not replaced");
  const pki = openHubPki({ dataDir, caDir, clusterExists: () => true });
  t.equal(pki.ca.fingerprint, certificateFingerprint(decode(ca["ca.crt"])), "the CA is used, not replaced");
  t.equal(
    pki.ca.verify(pki.host.certPem, { role: "hub" }).name.length > 0,
    true,
    "it signs the hub's host certificate",
  );
  const issued = pki.ca.issue({
    role: "agent",
    name: "beijing",
    publicKey: generateKeyPair().publicKeyPem,
    ttlMs: 60_000,
  });
  t.equal(
    pki.ca.verify(issued.certPem, { role: "agent", cluster: "beijing" }).cluster,
    "beijing",
    "and agents' certificates",
  );
  t.ok(decode(data("rlark-hub-webhook")["webhook-secret"]).length >= 32, "a webhook secret is made too");
});

t.test("helm template output rolls out on kwok nodes after server-side apply", async (t) => {
  // what `helm install --namespace rlark-system --create-namespace` does before the chart
  const namespace = { apiVersion: "v1", kind: "Namespace", metadata: { name: "rlark-system" } };
  const objects = rendered();
  // rlark-system and the agent's RBAC may be shared with other tests on this cluster: they stay
  const own = objects.filter((o) => !isSharedAgentRbac(o));
  const pv = await volumeForClaim(kc, "rlark-system", "rlark-hub-data");
  t.teardown(() => deleteAll(kc, [...own, pv]));
  await applyAll(kc, [namespace, ...objects]);
  await checkRolledOut(t, kc);
});

t.test("the chart's agent ServiceAccount may do what the kubernetes runtime does, and no more", async (t) => {
  await applyAll(kc, [
    { apiVersion: "v1", kind: "Namespace", metadata: { name: "rlark-system" } },
    ...rendered().filter(isSharedAgentRbac),
  ]);
  await checkAgentAccess(t, kc);
});

t.test("helm install, then upgrade, keeps the hub's CA, admin token and webhook secret", async (t) => {
  // a namespace and release of its own (the hub alone may live anywhere), so nothing is shared
  const namespace = `rlark-test-${randomBytes(4).toString("hex")}`;
  const release = `rlark-${randomBytes(3).toString("hex")}`;
  const pv = await volumeForClaim(kc, namespace, "rlark-hub-data");
  t.teardown(async () => {
    await deleteAll(kc, [{ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } }, pv]);
  });
  const helmRun = (...args: string[]) =>
    run(helm, [...args, "--kubeconfig", kubeconfig, "--namespace", namespace], helmEnv);
  const secrets = async () => {
    const core = kc.makeApiClient(CoreV1Api);
    const read = async (name: string) => (await core.readNamespacedSecret({ name, namespace })).data;
    return {
      admin: await read("rlark-hub-admin-token"),
      ca: await read("rlark-hub-ca"),
      webhook: await read("rlark-hub-webhook"),
    };
  };
  const chartArgs = [release, chart, "--set", "hub.repo=https://git.example.com/acme/fleet.git"];
  helmRun("install", ...chartArgs, "--create-namespace");
  t.ok(await deploymentAvailable(kc, namespace, "rlark-hub"), "installed: the hub's Deployment is available");
  const first = await secrets();
  t.ok(first.ca?.["ca.key"], "the chart made a CA");
  helmRun("upgrade", ...chartArgs, "--set", "hub.interval=5m");
  t.same(await secrets(), first, "an upgrade keeps them: enrolled agents still trust the hub");
  helmRun("uninstall", release);
  t.same(await secrets(), first, "an uninstall keeps them too (helm.sh/resource-policy: keep)");
});
