// Capability states of the embodied runtime on a Kubernetes cluster end to end: a real `rlark
// device-plugin` process for one node of a hack/kube cluster (kwok), with the rights the
// embodied-runtime catalog gives its ServiceAccount (a token of that account), publishes its
// capability file and a controller's as conditions on its Node; a kubernetes-runtime agent, with
// the agent's own token, reads them from the Nodes it watches and reports "<node>/<component>" to
// the hub. A kubelet-side Registration server (from the vendored proto) stands in for kubelet.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1NodeCondition,
  type V1Pod,
} from "@kubernetes/client-node";
import t, { type Test } from "tap";
import YAML from "yaml";
import { repoRoot } from "../../../hack/kube/paths.ts";
import type { Hub } from "../../../operators/hub/hub.ts";
import { CAPABILITY_CONDITION_PREFIX } from "../../../operators/lib/capability-condition.ts";
import { writeCapabilityStatus } from "../../../operators/lib/capability-status.ts";
import type { Capability } from "../../../operators/lib/tunnel/index.ts";
import { startKubeletRegistration } from "../../device/kubelet-side.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { applyAll, asAgentServiceAccount, parseObjects } from "../../helpers/install.ts";
import { startKubernetesAgentOnHub } from "../../helpers/kubernetes-agent-on-hub.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc } = fleetCluster(0);
const core = kc.makeApiClient(CoreV1Api);
const cli = path.resolve(import.meta.dirname, "../../../operators/cli/main.ts");

/** fleet/agent's RBAC and the catalog's device plugin identity (its ServiceAccount and ClusterRole). */
function rbacObjects() {
  const agent = join("fleet/agent");
  const { resources } = YAML.parse(readFileSync(path.join(agent, "kustomization.yaml"), "utf8")) as {
    resources: string[];
  };
  const catalog = parseObjects(
    readFileSync(join("fleet/addons-rendered/embodied-runtime/objects.yaml"), "utf8"),
  ).filter((o) => o.metadata?.name === "rlark-device-plugin" && o.kind !== "DaemonSet");
  return [
    ...resources
      .flatMap((file) => parseObjects(readFileSync(path.join(agent, file), "utf8")))
      .filter((o) => o.kind !== "Deployment"),
    ...catalog,
  ];
}

function join(relative: string): string {
  return path.join(repoRoot, relative);
}

/** A token of rlark-system/rlark-device-plugin; bound to `pod`, as the kubelet gives its pod one. */
async function devicePluginToken(pod?: V1Pod): Promise<string> {
  const boundObjectRef = pod && {
    apiVersion: "v1",
    kind: "Pod",
    name: pod.metadata?.name,
    uid: pod.metadata?.uid,
  };
  const request = await core.createNamespacedServiceAccountToken({
    name: "rlark-device-plugin",
    namespace: "rlark-system",
    body: { spec: { audiences: [], expirationSeconds: 3600, boundObjectRef } },
  });
  const token = request.status?.token;
  if (!token) throw new Error("the API server returned no token");
  return token;
}

/** The device plugin's pod on `node` (kwok runs it), whose bound token carries the node's name. */
async function devicePluginPod(t: Test, node: string): Promise<V1Pod> {
  const pod = await core.createNamespacedPod({
    namespace: "rlark-system",
    body: {
      metadata: { generateName: "rlark-device-plugin-" },
      spec: {
        nodeName: node,
        serviceAccountName: "rlark-device-plugin",
        automountServiceAccountToken: false,
        tolerations: [{ operator: "Exists" }],
        containers: [{ name: "device-plugin", image: "rlark/rlark:0.1.0" }],
      },
    },
  });
  t.teardown(() =>
    core.deleteNamespacedPod({
      name: pod.metadata?.name ?? "",
      namespace: "rlark-system",
      gracePeriodSeconds: 0,
    }),
  );
  return pod;
}

function kubeconfigWithToken(token: string): { file: (dir: string) => string; kubeConfig: KubeConfig } {
  const cluster = kc.getCurrentCluster();
  const text = YAML.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      { name: "c", cluster: { server: cluster?.server, "certificate-authority-data": cluster?.caData } },
    ],
    users: [{ name: "u", user: { token } }],
    contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
    "current-context": "x",
  });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(text);
  return {
    kubeConfig,
    file: (dir) => {
      const file = path.join(dir, "device-plugin.kubeconfig");
      writeFileSync(file, text, { mode: 0o600 });
      return file;
    },
  };
}

/** What the API server answers to a strategic-merge patch of `node`'s conditions. */
async function patchConditions(as: KubeConfig, node: string, conditions: V1NodeCondition[]): Promise<string> {
  return as
    .makeApiClient(CoreV1Api)
    .patchNodeStatus(
      { name: node, body: { status: { conditions } } },
      setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch),
    )
    .then(
      () => "allowed",
      (err: unknown) => (err instanceof ApiException ? `${err.code} ${String(err.body)}` : String(err)),
    );
}

/** Removes the capability conditions from `node`, so other tests' agents do not see them. */
async function clearCapabilityConditions(kubeConfig: KubeConfig, node: string): Promise<void> {
  const api = kubeConfig.makeApiClient(CoreV1Api);
  const live = await api.readNode({ name: node });
  const indexes = (live.status?.conditions ?? [])
    .map((c, i) => (c.type.startsWith(CAPABILITY_CONDITION_PREFIX) ? i : -1))
    .filter((i) => i >= 0)
    .reverse();
  if (indexes.length === 0) return;
  await api.patchNodeStatus(
    { name: node, body: indexes.map((i) => ({ op: "remove", path: `/status/conditions/${i}` })) },
    setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
  );
}

function start(t: Test, args: string[]): ChildProcess {
  const child = spawn(process.execPath, [cli, ...args], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    if (stderr.length < 64 * 1024) stderr += chunk.toString();
  });
  t.teardown(() => {
    child.kill("SIGKILL");
    if (!t.passing() && stderr) t.comment(`device-plugin stderr:\n${stderr}`);
  });
  return child;
}

async function capability(hub: Hub, name: string): Promise<Capability | undefined> {
  const status = (await hub.store.get("Cluster", undefined, "edge"))?.status as
    | { capabilities?: Capability[] }
    | undefined;
  return status?.capabilities?.find((c) => c.name === name);
}

t.test("a device plugin's node capabilities reach the hub through the kubernetes agent", async (t) => {
  await applyAll(kc, rbacObjects());
  const agentKc = await asAgentServiceAccount(kc);
  const agentNamespace = await testNamespace(t, kc, "devcap-agent");
  const robots = await core.listNode({ labelSelector: "rlark.io/node-category-robot=true" });
  const node = robots.items[0]?.metadata?.name;
  if (!node) throw new Error("the fleet has no robot node");
  t.teardown(() => clearCapabilityConditions(kc, node));

  const { hub } = await startHubOnGit(t, {
    files: {
      "cluster.yaml":
        "apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: edge\nspec:\n  runtime: kubernetes\n",
    },
  });
  await hub.source?.watcher.trigger();
  await waitFor("the cluster from git", async () => hub.store.get("Cluster", undefined, "edge"), onKube);
  await startKubernetesAgentOnHub(t, hub, "edge", {
    kubeConfig: agentKc,
    namespace: agentNamespace,
    reportIntervalMs: 1_000,
  });
  await waitFor("the agent's runtime capability", () => capability(hub, "runtime/kubernetes"), onKube);

  const root = mkdtempSync(path.join(tmpdir(), "rlark-kube-devcap-"));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const dir = (name: string) => {
    const d = path.join(root, name);
    mkdirSync(d);
    return d;
  };
  const [pluginDir, devDir, capabilityDir] = ["plugins", "dev", "caps"].map(dir) as [string, string, string];
  const devicePlugin = kubeconfigWithToken(await devicePluginToken(await devicePluginPod(t, node)));
  writeFileSync(path.join(devDir, "video0"), "");
  // a controller on the same node, through the shared directory
  writeCapabilityStatus(capabilityDir, { name: "camera-controller", process: "RUNNING", health: "READY" });

  const plugin = start(t, [
    "device-plugin",
    "--plugin-dir",
    pluginDir,
    "--dev-dir",
    devDir,
    "--robot-config",
    path.join(root, "robots.yaml"),
    "--socket-dir",
    path.join(root, "sockets"),
    "--cli-dir",
    path.join(root, "bin"),
    "--capability-dir",
    capabilityDir,
    "--node-name",
    node,
    "--kubeconfig",
    devicePlugin.file(root),
  ]);
  const waiting = await waitFor(
    "device-plugin STARTING (no kubelet yet)",
    async () => {
      const c = await capability(hub, `${node}/device-plugin`);
      return c?.health === "STARTING" && c;
    },
    onKube,
  );
  t.match(waiting, { process: "RUNNING", message: /waiting for .*kubelet.sock/ });
  t.same(
    await capability(hub, `${node}/camera-controller`),
    { name: `${node}/camera-controller`, process: "RUNNING", health: "READY" },
    "the controller's state, published by the node's device plugin",
  );
  const live = await core.readNode({ name: node });
  t.ok(
    live.status?.conditions?.some((c) => c.type === "Ready"),
    "the node's own conditions are still there (merged by type)",
  );

  const kubelet = await startKubeletRegistration(pluginDir);
  t.teardown(() => kubelet.stop());
  await waitFor(
    "device-plugin READY",
    async () => (await capability(hub, `${node}/device-plugin`))?.health === "READY",
    onKube,
  );

  plugin.kill("SIGTERM");
  const stopped = await waitFor(
    "device-plugin STOPPED",
    async () => {
      const c = await capability(hub, `${node}/device-plugin`);
      return c?.process === "STOPPED" && c;
    },
    onKube,
  );
  t.not(stopped.health, "FAILED", "a stopped plugin is not a failed one");
});

// fleet/agent/addon-admission-policy.yaml: RBAC lets the device plugin patch every Node's status;
// the policy confines it to its own Node's capability conditions.
t.test("a device plugin's token writes only its own node's capability conditions", async (t) => {
  await applyAll(kc, rbacObjects());
  const nodes = (await core.listNode()).items.map((n) => n.metadata?.name ?? "");
  const [own, other] = nodes;
  if (!own || !other) throw new Error("the fleet cluster needs two nodes");
  t.teardown(() => Promise.all([own, other].map((n) => clearCapabilityConditions(kc, n))));
  const bound = kubeconfigWithToken(await devicePluginToken(await devicePluginPod(t, own))).kubeConfig;
  const unbound = kubeconfigWithToken(await devicePluginToken()).kubeConfig;
  const now = new Date();
  const capabilityCondition: V1NodeCondition = {
    type: `${CAPABILITY_CONDITION_PREFIX}attack-check`,
    status: "True",
    reason: "Ready",
    message: "{}",
    lastHeartbeatTime: now,
    lastTransitionTime: now,
  };
  // a new policy takes a moment to be enforced
  const refusedElsewhere = await waitFor(
    "the policy refuses another node's status",
    async () => {
      const answer = await patchConditions(bound, other, [capabilityCondition]);
      return answer !== "allowed" && answer;
    },
    onKube,
  );
  t.match(refusedElsewhere, /^403 .*writes only the status of the node its pod runs on/);
  t.equal(await patchConditions(bound, own, [capabilityCondition]), "allowed", "its own node's capability");
  t.match(
    await patchConditions(bound, own, [
      {
        type: "Ready",
        status: "False",
        reason: "Taken",
        message: "x",
        lastHeartbeatTime: now,
        lastTransitionTime: now,
      },
    ]),
    /^403 .*changes only capability\.rlinf\.io\/\* conditions/,
    "not the node's Ready condition",
  );
  t.match(
    await patchConditions(unbound, own, [capabilityCondition]),
    /^403 .*the token must be bound to a pod on that node/,
    "a token bound to no pod writes nothing",
  );
  const live = await core.readNode({ name: own });
  t.equal(live.status?.conditions?.find((c) => c.type === "Ready")?.status, "True", "Ready untouched");
});
