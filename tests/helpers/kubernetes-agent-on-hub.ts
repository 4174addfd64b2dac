// A kubernetes-runtime agent enrolled on a test's hub (see agent-on-hub.ts), its runtime on a real
// API server: a fresh instance name keeps its objects apart from other tests' on a shared fleet.
import { randomBytes } from "node:crypto";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Test } from "tap";
import type { Agent } from "../../operators/agent/agent.ts";
import { KubernetesRuntime } from "../../operators/agent/runtimes/kubernetes/index.ts";
import type { Hub } from "../../operators/hub/hub.ts";
import { type AgentOnHubOptions, startAgentOnHub } from "./agent-on-hub.ts";

export type KubernetesAgentOnHubOptions = Omit<AgentOnHubOptions, "runtime" | "runtimeKind"> & {
  kubeConfig: KubeConfig;
  /** Where Tasks whose template names no namespace go. */
  namespace: string;
};

/** The agent stops its runtime when it stops, at the test's teardown. */
export async function startKubernetesAgentOnHub(
  t: Test,
  hub: Hub,
  cluster: string,
  { kubeConfig, namespace, ...options }: KubernetesAgentOnHubOptions,
): Promise<Agent> {
  const runtime = await KubernetesRuntime.start({
    kubeConfig,
    defaultNamespace: namespace,
    instance: `${cluster}${randomBytes(3).toString("hex")}`,
    retryIntervalMs: 500,
  });
  return startAgentOnHub(t, hub, cluster, { runtime, runtimeKind: "kubernetes", ...options });
}
