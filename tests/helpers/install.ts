// What the install tests (tests/e2e/fleet/) share: rendered manifests applied to a fleet cluster
// by server-side apply, rollouts on kwok nodes, and the agent's RBAC checked as its ServiceAccount
// (the impersonation tests/e2e/agent/ uses too).
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  ApiException,
  AppsV1Api,
  AuthorizationV1Api,
  CoreV1Api,
  KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
} from "@kubernetes/client-node";
import type { Test } from "tap";
import YAML from "yaml";
import { buildProgram } from "../../operators/cli/program.ts";
import { waitFor } from "./wait-for.ts";

export const AGENT_USER = "system:serviceaccount:rlark-system:rlark-agent";
const FIELD_MANAGER = "rlark-install-test";

/** Runs a tool to completion; its stdout, or an error with its stderr. */
export function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): string {
  const out = spawnSync(command, args, { encoding: "utf8", env, maxBuffer: 16 * 1024 * 1024 });
  if (out.status !== 0) {
    throw new Error(`${command} ${args.join(" ")} failed (exit ${out.status ?? out.signal}):\n${out.stderr}`);
  }
  return out.stdout;
}

/** The objects of a multi-document YAML stream (empty documents dropped). */
export function parseObjects(text: string): KubernetesObject[] {
  return YAML.parseAllDocuments(text)
    .map((d) => d.toJSON() as KubernetesObject | null)
    .filter((o): o is KubernetesObject => o !== null && typeof o === "object" && "kind" in o);
}

export function applyAll(kc: KubeConfig, objects: KubernetesObject[]): Promise<KubernetesObject[]> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  // Namespaces first so the namespaced objects after them have somewhere to go.
  const ordered = [...objects].sort(
    (a, b) => Number(b.kind === "Namespace") - Number(a.kind === "Namespace"),
  );
  return ordered.reduce<Promise<KubernetesObject[]>>(async (done, obj) => {
    const list = await done;
    const applied = await api
      .patch(obj, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply)
      .catch((err: unknown) => {
        const body = err instanceof ApiException ? String(err.body) : String(err);
        throw new Error(`server-side apply of ${obj.kind}/${obj.metadata?.name}: ${body}`);
      });
    return [...list, applied];
  }, Promise.resolve([]));
}

/** Deletes objects (the test's own: never Namespaces or cluster-wide RBAC other tests share). */
export async function deleteAll(kc: KubeConfig, objects: KubernetesObject[]): Promise<void> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  for (const obj of objects) await api.delete(obj).catch(() => undefined);
}

/** Waits until a Deployment's current generation has all its replicas available. */
export function deploymentAvailable(kc: KubeConfig, namespace: string, name: string): Promise<true> {
  const apps = kc.makeApiClient(AppsV1Api);
  return waitFor(
    `Deployment ${namespace}/${name} available`,
    async () => {
      const d = await apps.readNamespacedDeployment({ name, namespace });
      const available = d.status?.conditions?.some((c) => c.type === "Available" && c.status === "True");
      const current = (d.status?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 1);
      return available && current && d.status?.availableReplicas === d.spec?.replicas ? true : undefined;
    },
    { attempts: 480, everyMs: 250 },
  );
}

/**
 * The cluster has no storage provisioner: a PersistentVolume bound ahead to the hub's claim
 * stands in for one, so the hub's pod can be scheduled. Returns it for deletion.
 */
export async function volumeForClaim(
  kc: KubeConfig,
  namespace: string,
  claim: string,
): Promise<KubernetesObject> {
  const pv = {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name: `rlark-test-${randomBytes(4).toString("hex")}`, labels: { "rlark.io/test": "true" } },
    spec: {
      capacity: { storage: "100Gi" },
      accessModes: ["ReadWriteOnce"],
      persistentVolumeReclaimPolicy: "Retain",
      storageClassName: "",
      claimRef: { namespace, name: claim },
      hostPath: { path: "/tmp/rlark-test-volume" },
    },
  };
  await kc.makeApiClient(CoreV1Api).createPersistentVolume({ body: pv });
  return pv;
}

/**
 * The agent's RBAC objects (fleet/agent, the chart's agent-*rbac.yaml): cluster-wide and shared
 * with other tests on the cluster, so they are applied but never deleted.
 */
export function isSharedAgentRbac(o: KubernetesObject): boolean {
  return ["rlark-agent", "rlark-agent-addons"].includes(o.metadata?.name ?? "") && o.kind !== "Deployment";
}

/**
 * The same cluster, seen as the agent's ServiceAccount through a token of its own (TokenRequest,
 * as the kubelet gets one for the agent's pod): its real identity and groups, not impersonation.
 */
export async function asAgentServiceAccount(kc: KubeConfig): Promise<KubeConfig> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error("the fleet kubeconfig has no current cluster");
  const request = await kc.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
    name: "rlark-agent",
    namespace: "rlark-system",
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const token = request.status?.token;
  if (!token) throw new Error("the API server issued no token for rlark-system/rlark-agent");
  const out = new KubeConfig();
  out.loadFromOptions({
    clusters: [cluster],
    users: [{ name: "rlark-agent", token }],
    contexts: [{ name: "rlark-agent", cluster: cluster.name, user: "rlark-agent" }],
    currentContext: "rlark-agent",
  });
  return out;
}

/** The same cluster, seen as `user` through impersonation. */
export function impersonating(kc: KubeConfig, user: string): KubeConfig {
  const cluster = kc.getCurrentCluster();
  const admin = kc.getCurrentUser();
  if (!cluster || !admin) throw new Error("the fleet kubeconfig has no current cluster or user");
  const out = new KubeConfig();
  out.loadFromOptions({
    clusters: [cluster],
    users: [{ ...admin, name: "impersonated", impersonateUser: user }],
    contexts: [{ name: "impersonated", cluster: cluster.name, user: "impersonated" }],
    currentContext: "impersonated",
  });
  return out;
}

export interface Access {
  verb: string;
  resource: string;
  group?: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

/** "verb group/resource[/sub] [ns/name]", for messages. */
function describe(a: Access): string {
  const what = `${a.group ? `${a.group}/` : ""}${a.resource}${a.subresource ? `/${a.subresource}` : ""}`;
  const where = [a.namespace, a.name].filter(Boolean).join("/");
  return `${a.verb} ${what}${where ? ` ${where}` : ""}`;
}

/** Asks the API server, as the impersonated user, whether it may do `a`. */
export async function allowed(kc: KubeConfig, a: Access): Promise<boolean> {
  const review = await kc.makeApiClient(AuthorizationV1Api).createSelfSubjectAccessReview({
    body: {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SelfSubjectAccessReview",
      spec: { resourceAttributes: { ...a, group: a.group ?? "" } },
    },
  });
  return review.status?.allowed === true;
}

/** A namespace name like the Tasks' (any a Task template names), unique to this run. */
const taskNamespace = `team-${randomBytes(3).toString("hex")}`;

/** What the kubernetes runtime does (operators/agent/runtimes/kubernetes): all must be allowed. */
const RUNTIME_ACCESS: Access[] = [
  ...["deployments", "statefulsets", "daemonsets"].flatMap((resource) =>
    ["create", "patch", "get", "list", "watch", "delete"].map((verb) => ({
      verb,
      resource,
      group: "apps",
      namespace: taskNamespace,
    })),
  ),
  ...["create", "patch", "watch", "delete"].map((verb) => ({
    verb,
    resource: "jobs",
    group: "batch",
    namespace: taskNamespace,
  })),
  ...["services", "configmaps"].flatMap((resource) =>
    ["create", "patch", "list", "delete"].map((verb) => ({ verb, resource, namespace: taskNamespace })),
  ),
  { verb: "watch", resource: "persistentvolumeclaims", namespace: taskNamespace },
  { verb: "delete", resource: "persistentvolumeclaims", namespace: taskNamespace },
  { verb: "watch", resource: "pods" },
  { verb: "watch", resource: "storageclasses", group: "storage.k8s.io" },
  { verb: "get", resource: "pods", subresource: "log", namespace: taskNamespace },
  // access sessions and forwards (docs/access.md); the agent refuses pods that are not its Tasks'
  ...["get", "create"].flatMap((verb) =>
    ["exec", "portforward"].map((subresource) => ({
      verb,
      resource: "pods",
      subresource,
      namespace: taskNamespace,
    })),
  ),
  { verb: "watch", resource: "nodes" },
  { verb: "patch", resource: "nodes", name: "worker-1" },
  { verb: "create", resource: "namespaces" },
  { verb: "patch", resource: "namespaces", name: taskNamespace },
  { verb: "create", resource: "secrets", namespace: "rlark-system" },
  { verb: "get", resource: "secrets", namespace: "rlark-system", name: "rlark-agent-identity" },
  { verb: "update", resource: "secrets", namespace: "rlark-system", name: "rlark-agent-identity" },
  { verb: "patch", resource: "secrets", namespace: "rlark-system", name: "rlark-domain-peers" },
];

const RBAC = "rbac.authorization.k8s.io";
const ADMISSION = "admissionregistration.k8s.io";

/** What installing Addons needs (addon-cluster-role.yaml): all must be allowed. */
const ADDON_ACCESS: Access[] = [
  ...["roles", "rolebindings"].flatMap((resource) =>
    ["get", "create", "patch", "delete"].map((verb) => ({
      verb,
      resource,
      group: RBAC,
      namespace: taskNamespace,
    })),
  ),
  ...["clusterroles", "clusterrolebindings"].flatMap((resource) =>
    ["get", "create", "patch", "delete"].map((verb) => ({ verb, resource, group: RBAC })),
  ),
  ...["get", "create", "patch", "delete"].map((verb) => ({
    verb,
    resource: "serviceaccounts",
    namespace: taskNamespace,
  })),
  ...["get", "create", "patch", "update", "delete"].map((verb) => ({
    verb,
    resource: "mutatingwebhookconfigurations",
    group: ADMISSION,
    name: "rlark-device-webhook",
  })),
  { verb: "list", resource: "secrets", namespace: "rlark-system", name: "rlark-domain-peers" },
  { verb: "patch", resource: "nodes", subresource: "status", name: "worker-1" },
];

/** What the runtime never does: all must be refused. */
const FORBIDDEN_ACCESS: Access[] = [
  { verb: "get", resource: "secrets", namespace: taskNamespace, name: "db-password" },
  { verb: "list", resource: "secrets" },
  { verb: "create", resource: "secrets", namespace: taskNamespace },
  { verb: "get", resource: "secrets", namespace: "rlark-system", name: "rlark-hub-admin-token" },
  { verb: "update", resource: "secrets", namespace: "rlark-system", name: "rlark-agent-bootstrap" },
  { verb: "delete", resource: "secrets", namespace: "rlark-system", name: "rlark-agent-identity" },
  { verb: "delete", resource: "secrets", namespace: "rlark-system", name: "rlark-domain-peers" },
  { verb: "patch", resource: "secrets", namespace: taskNamespace, name: "rlark-domain-peers" },
  // granting is bounded by what the agent holds: never escalate nor bind
  { verb: "escalate", resource: "clusterroles", group: RBAC, name: "rlark-agent" },
  { verb: "escalate", resource: "roles", group: RBAC, namespace: taskNamespace },
  { verb: "bind", resource: "clusterroles", group: RBAC, name: "cluster-admin" },
  { verb: "bind", resource: "roles", group: RBAC, namespace: taskNamespace },
  { verb: "list", resource: "clusterroles", group: RBAC },
  { verb: "create", resource: "mutatingwebhookconfigurations", group: ADMISSION, name: "someone-elses" },
  { verb: "patch", resource: "mutatingwebhookconfigurations", group: ADMISSION, name: "someone-elses" },
  { verb: "create", resource: "validatingwebhookconfigurations", group: ADMISSION },
  { verb: "delete", resource: "validatingadmissionpolicies", group: ADMISSION, name: "rlark-agent-addons" },
  {
    verb: "delete",
    resource: "validatingadmissionpolicybindings",
    group: ADMISSION,
    name: "rlark-agent-addons",
  },
  {
    verb: "create",
    resource: "serviceaccounts",
    subresource: "token",
    namespace: taskNamespace,
    name: "default",
  },
  { verb: "delete", resource: "namespaces", name: taskNamespace },
  { verb: "delete", resource: "nodes", name: "worker-1" },
  { verb: "create", resource: "pods", namespace: taskNamespace },
  {
    verb: "create",
    resource: "serviceaccounts",
    subresource: "token",
    namespace: "rlark-system",
    name: "rlark-agent",
  },
  { verb: "create", resource: "persistentvolumeclaims", namespace: taskNamespace },
  { verb: "create", resource: "customresourcedefinitions", group: "apiextensions.k8s.io" },
  { verb: "impersonate", resource: "users" },
];

export type Container = { image: string; args: string[] };

/**
 * Deployment `name`'s container runs `rlark <command>` from rlark/hub (the hub) or rlark/rlark
 * at this version, with only options `rlark <command>` has.
 */
export function checkRunsRlark(
  t: Test,
  name: string,
  command: "hub" | "agent",
  c: Container,
  version: string,
): void {
  const image = command === "hub" ? "rlark/hub" : "rlark/rlark";
  t.equal(c.image, `${image}:${version}`, `${name}: ${image} at this version`);
  const [sub, ...args] = c.args;
  t.equal(sub, command);
  const known = new Set(
    buildProgram()
      .commands.find((cmd) => cmd.name() === command)
      ?.options.map((o) => o.long),
  );
  for (const arg of args)
    t.ok(known.has(arg.split("=")[0]), `${name}: ${arg.split("=")[0]} is an option of rlark ${command}`);
}

/**
 * As the agent's ServiceAccount: all of RUNTIME_ACCESS and ADDON_ACCESS is allowed and all of
 * FORBIDDEN_ACCESS refused.
 */
export async function checkAgentAccess(t: Test, kc: KubeConfig): Promise<void> {
  const agent = impersonating(kc, AGENT_USER);
  for (const access of [...RUNTIME_ACCESS, ...ADDON_ACCESS])
    t.ok(await allowed(agent, access), `allowed: ${describe(access)}`);
  for (const access of FORBIDDEN_ACCESS)
    t.notOk(await allowed(agent, access), `refused: ${describe(access)}`);
}

/** The hub's and the agent's Deployments in rlark-system both become available. */
export async function checkRolledOut(t: Test, kc: KubeConfig): Promise<void> {
  t.ok(await deploymentAvailable(kc, "rlark-system", "rlark-hub"), "the hub's Deployment is available");
  t.ok(await deploymentAvailable(kc, "rlark-system", "rlark-agent"), "the agent's Deployment is available");
}
