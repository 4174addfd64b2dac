// A Kubernetes user bound to fleet/agent's rules (its ClusterRole, and its Role in one namespace):
// a test's kubernetes runtime runs as it (impersonated), so every path is tried with exactly the
// RBAC the agent is installed with.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { type KubeConfig, KubernetesObjectApi, type V1PolicyRule } from "@kubernetes/client-node";
import type { Test } from "tap";
import YAML from "yaml";
import { repoRoot } from "../../hack/kube/paths.ts";
import {
  KubernetesRuntime,
  type KubernetesRuntimeOptions,
} from "../../operators/agent/runtimes/kubernetes/index.ts";
import type { Hub } from "../../operators/hub/hub.ts";
import { startAgentOnHub } from "./agent-on-hub.ts";
import { impersonating } from "./install.ts";
import { onKube, waitFor } from "./wait-for.ts";

/**
 * Creates the user's grants (removed at teardown) and returns its name. `moreClusterRules` are
 * added to the ClusterRole, as an overlay of fleet/agent would (nodes/proxy for disk figures).
 */
export async function fleetAgentIdentity(
  t: Test,
  kc: KubeConfig,
  namespace: string,
  moreClusterRules: V1PolicyRule[] = [],
): Promise<string> {
  const name = `rlark-test-agent-${randomBytes(4).toString("hex")}`;
  const rules = (file: string) =>
    (YAML.parse(readFileSync(path.join(repoRoot, "fleet/agent", file), "utf8")) as { rules: V1PolicyRule[] })
      .rules;
  const subjects = [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name }];
  const roleRef = (kind: string) => ({ apiGroup: "rbac.authorization.k8s.io", kind, name });
  const grants = [
    { kind: "ClusterRole", metadata: { name }, rules: [...rules("cluster-role.yaml"), ...moreClusterRules] },
    { kind: "ClusterRoleBinding", metadata: { name }, roleRef: roleRef("ClusterRole"), subjects },
    { kind: "Role", metadata: { name, namespace }, rules: rules("role.yaml") },
    { kind: "RoleBinding", metadata: { name, namespace }, roleRef: roleRef("Role"), subjects },
  ].map((grant) => ({ apiVersion: "rbac.authorization.k8s.io/v1", ...grant }));
  const objects = KubernetesObjectApi.makeApiClient(kc);
  for (const grant of grants) await objects.create(grant);
  t.teardown(async () => {
    for (const grant of grants.reverse()) await objects.delete(grant).catch(() => undefined);
  });
  return name;
}

/**
 * The hub's kubernetes agent for `cluster`, its runtime running as fleetAgentIdentity in
 * `namespace`, and the name of the first of its pods the hub sees Running.
 */
export async function startFleetKubeAgent(
  t: Test,
  hub: Hub,
  kc: KubeConfig,
  namespace: string,
  cluster: string,
  more: { clusterRules?: V1PolicyRule[]; runtime?: Partial<KubernetesRuntimeOptions> } = {},
): Promise<{ runtime: KubernetesRuntime; kubeConfig: KubeConfig; pod: string }> {
  const kubeConfig = impersonating(kc, await fleetAgentIdentity(t, kc, namespace, more.clusterRules));
  const runtime = await KubernetesRuntime.start({
    kubeConfig,
    defaultNamespace: namespace,
    instance: `${cluster}${randomBytes(3).toString("hex")}`,
    retryIntervalMs: 500,
    ...more.runtime,
  });
  await startAgentOnHub(t, hub, cluster, { runtime, runtimeKind: "kubernetes", reportIntervalMs: 500 });
  const pod = await waitFor(
    `a pod of ${cluster} Running on the hub`,
    async () =>
      (await hub.store.list("Pod", { namespace: `agent-${cluster}` })).items.find(
        (p) => (p.status as { phase?: string }).phase === "Running",
      )?.metadata.name,
    onKube,
  );
  return { runtime, kubeConfig, pod };
}
