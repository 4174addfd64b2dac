// fleet/agent/ against a real kube-apiserver: every manifest passes a server-side dry-run apply,
// and the RBAC it grants is enough for the kubernetes runtime (run as the agent's ServiceAccount
// through impersonation) and no more than that.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  type RequestContext,
} from "@kubernetes/client-node";
import t from "tap";
import YAML from "yaml";
import { repoRoot } from "../../../hack/kube/paths.ts";
import {
  KubernetesRuntime,
  secretCredentialStore,
} from "../../../operators/agent/runtimes/kubernetes/index.ts";
import { buildProgram } from "../../../operators/cli/program.ts";
import { kubeTask } from "../../agent/runtimes/kubernetes/tasks.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { AGENT_USER, impersonating } from "../../helpers/install.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc } = fleetCluster(0);
const objects = KubernetesObjectApi.makeApiClient(kc);
const base = join(repoRoot, "fleet/agent");

function manifests(): KubernetesObject[] {
  const kustomization = YAML.parse(readFileSync(join(base, "kustomization.yaml"), "utf8")) as {
    namespace?: string;
    resources: string[];
  };
  return kustomization.resources.flatMap((file) =>
    YAML.parseAllDocuments(readFileSync(join(base, file), "utf8")).map((d) => d.toJSON() as KubernetesObject),
  );
}

const apply = (obj: KubernetesObject, dryRun?: string) =>
  objects.patch(obj, undefined, dryRun, "rlark-fleet-test", true, PatchStrategy.ServerSideApply);

t.test("every agent manifest passes a server-side dry-run apply", async (t) => {
  const all = manifests();
  t.same(
    all.map((o) => o.kind).sort(),
    [
      "ClusterRole",
      "ClusterRole",
      "ClusterRoleBinding",
      "ClusterRoleBinding",
      "Deployment",
      "Namespace",
      "Role",
      "RoleBinding",
      "ServiceAccount",
      "ValidatingAdmissionPolicy",
      "ValidatingAdmissionPolicy",
      "ValidatingAdmissionPolicyBinding",
      "ValidatingAdmissionPolicyBinding",
    ],
    "namespace, identity, RBAC (the runtime's and the addons'), the admission policies (the agent's, the device plugin's) and the Deployment",
  );
  // namespaced objects are checked against their namespace: it must exist, not only in a dry run
  await apply(all.find((o) => o.kind === "Namespace")!);
  for (const obj of all) {
    const result = await apply(obj, "All").catch((err: unknown) => {
      const body = err instanceof ApiException ? String(err.body) : String(err);
      t.fail(`${obj.kind}/${obj.metadata?.name}: ${body}`);
      return undefined;
    });
    if (result)
      t.equal(result.metadata?.name, obj.metadata?.name, `${obj.kind}/${obj.metadata?.name} is accepted`);
  }
  const deployment = all.find((o) => o.kind === "Deployment") as KubernetesObject & {
    spec: { template: { spec: { containers: { image: string }[]; serviceAccountName: string } } };
  };
  const version = (JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { version: string })
    .version;
  t.same(
    deployment.spec.template.spec.containers.map((c) => c.image),
    [`rlark/rlark:${version}`],
    "the one image, at this version",
  );
  t.equal(deployment.spec.template.spec.serviceAccountName, "rlark-agent");
});

t.test("the Deployment's arguments are options `rlark agent` has", async (t) => {
  const deployment = manifests().find((o) => o.kind === "Deployment") as KubernetesObject & {
    spec: { template: { spec: { containers: { args: string[] }[] } } };
  };
  const [command, ...args] = deployment.spec.template.spec.containers[0]?.args ?? [];
  t.equal(command, "agent");
  const agent = buildProgram().commands.find((c) => c.name() === "agent");
  const known = new Set(agent?.options.map((o) => o.long));
  for (const arg of args) {
    const flag = arg.split("=")[0] ?? "";
    t.ok(known.has(flag), `${flag} is an option of rlark agent`);
  }
  t.ok(args.includes("--runtime=kubernetes"), "it runs the kubernetes runtime");
});

t.test("the agent's RBAC lets the runtime do its work and nothing beyond it", async (t) => {
  for (const obj of manifests().filter((o) => o.kind !== "Deployment")) await apply(obj);
  const namespace = await testNamespace(t, kc, "fleet-rbac");
  const agentKc = impersonating(kc, AGENT_USER);
  const warnings: string[] = [];
  const runtime = await KubernetesRuntime.start({
    kubeConfig: agentKc,
    defaultNamespace: namespace,
    instance: `t${randomBytes(4).toString("hex")}`,
    retryIntervalMs: 500,
    logger: {
      info() {},
      warn: (message, fields) => warnings.push(`${message} ${JSON.stringify(fields)}`),
      error: (message, fields) => warnings.push(`${message} ${JSON.stringify(fields)}`),
    },
  });
  t.teardown(() => runtime.stop());
  t.teardown(() => {
    if (warnings.length > 0) t.comment(`runtime warnings:\n${[...new Set(warnings)].join("\n")}`);
  });
  t.ok(runtime.observe().nodes.length > 0, "it lists and watches Nodes");
  const task = kubeTask(
    "rbac",
    "web",
    {
      kind: "StatefulSet",
      replicas: 1,
      template: { spec: { containers: [{ name: "main", image: "x:1" }] } },
    },
    { annotations: { "rlinf.io/ray-role": "head", "rlinf.io/ray-total-nodes": "1" } },
  );
  await runtime.apply([task]);
  await waitFor(
    "the Task's pod Running, seen as the agent",
    async () =>
      runtime.observe().pods.some((p) => p.task === "rbac-web" && p.phase === "Running") ? true : undefined,
    onKube,
  );
  t.same(runtime.rejected, [], "nothing refused");
  await runtime.cluster.applyNodeOverlays([]);
  await runtime.apply([]);
  await waitFor(
    "the Task pruned, as the agent",
    async () => (runtime.observe().pods.some((p) => p.task === "rbac-web") ? undefined : true),
    onKube,
  );
  await waitFor(
    "the Services it made pruned too",
    async () => {
      const services = await agentKc.makeApiClient(CoreV1Api).listNamespacedService({ namespace });
      return services.items.length === 0 ? true : undefined;
    },
    onKube,
  );

  const denied = await agentKc
    .makeApiClient(CoreV1Api)
    .listSecretForAllNamespaces()
    .then(() => undefined)
    .catch((err: unknown) => (err instanceof ApiException ? err.code : -1));
  t.equal(denied, 403, "it cannot read Secrets across the cluster");
  const ownSecrets = await agentKc
    .makeApiClient(CoreV1Api)
    .readNamespacedSecret({ name: "someone-elses", namespace: "rlark-system" })
    .then(() => 200)
    .catch((err: unknown) => (err instanceof ApiException ? err.code : -1));
  t.equal(ownSecrets, 403, "in rlark-system only its own identity Secret");
});

t.test("the agent keeps its identity in the Secret its Role allows, and reads it back", async (t) => {
  for (const obj of manifests().filter((o) => o.kind !== "Deployment")) await apply(obj);
  const core = kc.makeApiClient(CoreV1Api);
  t.teardown(() =>
    core
      .deleteNamespacedSecret({ name: "rlark-agent-identity", namespace: "rlark-system" })
      .catch(() => undefined),
  );
  await core
    .deleteNamespacedSecret({ name: "rlark-agent-identity", namespace: "rlark-system" })
    .catch(() => undefined);
  const store = secretCredentialStore({ kubeConfig: impersonating(kc, AGENT_USER) });
  await waitFor(
    "the old Secret gone",
    async () => ((await store.load()) === undefined ? true : undefined),
    onKube,
  );
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const credentials = {
    cluster: "beijing",
    privateKeyPem: privateKey.export({ type: "pkcs1", format: "pem" }).toString(),
    certPem: "-----BEGIN CERTIFICATE-----\nMIIB1\n-----END CERTIFICATE-----\n",
    caCertPem: "-----BEGIN CERTIFICATE-----\nMIIB2\n-----END CERTIFICATE-----\n",
    hubCertPem: "-----BEGIN CERTIFICATE-----\nMIIB4\n-----END CERTIFICATE-----\n",
  };
  await store.save(credentials);
  t.same(await store.load(), credentials, "saved as the agent, read back as the agent");
  const renewed = {
    ...credentials,
    certPem: "-----BEGIN CERTIFICATE-----\nMIIB3\n-----END CERTIFICATE-----\n",
  };
  await store.save(renewed);
  t.same(await store.load(), renewed, "a renewal replaces the certificate");
  const secret = await core.readNamespacedSecret({ name: "rlark-agent-identity", namespace: "rlark-system" });
  t.equal(secret.type, "kubernetes.io/tls");
});

t.test("without nodes/proxy, disk figures are off: said once, one node asked per round", async (t) => {
  // counts the runtime's node proxy requests: rounds, without waiting for a stretch of time
  class Counting extends KubeConfig {
    proxyRequests = 0;
    override async applySecurityAuthentication(context: RequestContext): Promise<void> {
      if (context.getUrl().includes("/proxy/")) this.proxyRequests++;
      return super.applySecurityAuthentication(context);
    }
  }
  const agentKc = new Counting();
  const plain = impersonating(kc, AGENT_USER);
  agentKc.loadFromOptions({
    clusters: plain.getClusters(),
    users: plain.getUsers(),
    contexts: plain.getContexts(),
    currentContext: plain.getCurrentContext(),
  });
  const logged: string[] = [];
  const log = (message: string) => logged.push(message);
  const runtime = await KubernetesRuntime.start({
    kubeConfig: agentKc,
    instance: `t${randomBytes(4).toString("hex")}`,
    diskStatsIntervalMs: 100,
    logger: { info: log, warn: log, error: log },
  });
  t.teardown(() => runtime.stop());
  const nodes = runtime.observe().nodes.length;
  await waitFor(
    "four rounds of stats reads",
    async () => (agentKc.proxyRequests >= 4 ? true : undefined),
    onKube,
  );
  t.same(
    logged.filter((m) => /disk figures/.test(m)),
    ["no disk figures: this agent may not get nodes/proxy (grant it to see disk use)"],
    `said once in ${agentKc.proxyRequests} requests on ${nodes} nodes, not once per node and round`,
  );
  t.ok(nodes > 1, "a cluster of several nodes");
  t.same(
    runtime.observe().nodes.filter((n) => n.disk),
    [],
    "no node has disk figures",
  );
});
