// The placement's picture of the pool: Clusters and their Nodes reduced to what placement reads,
// with each node's free resources already computed (allocatable − requested − reserved).

import type { Cluster, Node } from "../../api/index.ts";
import { type Amounts, amounts } from "./resources.ts";

export interface NodeView {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  /** Not cordoned (spec.unschedulable). */
  readonly schedulable: boolean;
  /** Reports Ready=True (or, without a Ready condition, phase Online). */
  readonly ready: boolean;
  readonly allocatable: Amounts;
  /** allocatable − requested − reserved by Tasks placed but not yet in the node's report. */
  readonly free: Amounts;
}

export interface ClusterView {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  /** What the agent runs: the runtime it announced in its hello (status.runtime), else spec.runtime. */
  readonly runtime: string;
  readonly online: boolean;
  /** Sorted by name. */
  readonly nodes: readonly NodeView[];
  /** Measured p99 RTT (ms) from this cluster to each cluster it probed (PingMesh). */
  readonly rttMs?: ReadonlyMap<string, number>;
}

/** The node's base figures before reservations: allocatable and allocatable − requested. */
export function nodeBase(node: Node): Omit<NodeView, "free"> & { unreserved: Amounts } {
  const allocatable = amounts(node.status?.allocatable ?? node.status?.capacity);
  const requested = amounts(node.status?.requested);
  const unreserved: Record<string, number> = { ...allocatable };
  for (const [name, value] of Object.entries(requested)) {
    if (name in unreserved) unreserved[name] = (unreserved[name] as number) - value;
  }
  const readyCondition = node.status?.conditions?.find((c) => c.type === "Ready");
  const ready = readyCondition ? readyCondition.status === "True" : node.status?.phase === "Online";
  return {
    name: node.metadata.name,
    labels: node.metadata.labels ?? {},
    schedulable: node.spec?.unschedulable !== true,
    ready,
    allocatable,
    unreserved,
  };
}

/** The runtime the connected agent announced; until one has, the runtime git declares. */
export function clusterRuntime(cluster: Cluster): string {
  return cluster.status?.runtime ?? cluster.spec?.runtime ?? "";
}

/** Whether the cluster's agent is connected. */
export function clusterOnline(cluster: Cluster): boolean {
  return cluster.status?.phase === "Online";
}

/** When the cluster went Offline (ms), or undefined when it is Online or the time is unknown. */
export function offlineSince(cluster: Cluster): number | undefined {
  if (clusterOnline(cluster)) return undefined;
  const at = cluster.status?.lastTransitionTime ?? cluster.status?.lastHeartbeatTime;
  if (!at) return undefined;
  const ms = Date.parse(at);
  return Number.isNaN(ms) ? undefined : ms;
}
