// What one task template asks of a cluster: runtime, selectors, replicas and the resources of
// one replica, derived from the template as the Kubernetes scheduler would read its pod spec.

import type { AgentType, TaskTemplate } from "../../api/index.ts";
import { compileLabelSelector, type Selector } from "../../lib/store/index.ts";
import { type NearConstraint, parseMaxRtt } from "./near.ts";
import { type Amounts, amounts, POD_COUNT } from "./resources.ts";

export interface PlacementTask {
  /** Template name (unique in the Job). */
  name: string;
  agentType: AgentType;
  /** Labels a node must carry: the template's nodeSelector and its pod spec's. */
  nodeSelector: Readonly<Record<string, string>>;
  /** Over Cluster labels; absent: any cluster. */
  clusterSelector?: Selector;
  /** Replicas to fit; a DaemonSet fits when at least one node takes it. */
  replicas: number;
  daemonSet: boolean;
  /** One replica's requests (with one pod), in thousandths. */
  request: Amounts;
  /** Only a cluster within maxRTT of the named task's. */
  near?: NearConstraint;
}

interface ContainerLike {
  resources?: { requests?: Record<string, unknown>; limits?: Record<string, unknown> };
}

/** A container's requests; a resource with only a limit requests the limit (as Kubernetes defaults it). */
function containerRequest(container: ContainerLike): Record<string, number> {
  return { ...amounts(container.resources?.limits), ...amounts(container.resources?.requests) };
}

/**
 * A pod's effective request: the sum over containers, raised to any init container's (init
 * containers run one at a time, before the others), as the scheduler computes it.
 */
export function podRequest(spec: {
  containers?: readonly ContainerLike[];
  initContainers?: readonly ContainerLike[];
}): Record<string, number> {
  const total: Record<string, number> = {};
  for (const c of spec.containers ?? []) {
    for (const [name, value] of Object.entries(containerRequest(c))) total[name] = (total[name] ?? 0) + value;
  }
  for (const c of spec.initContainers ?? []) {
    for (const [name, value] of Object.entries(containerRequest(c))) {
      if (value > (total[name] ?? 0)) total[name] = value;
    }
  }
  total[POD_COUNT] = 1000;
  return total;
}

/** The placement view of a Job's task template. clusterSelector errors surface as thrown InvalidError. */
export function placementTask(template: TaskTemplate): PlacementTask {
  const base = {
    name: template.name,
    agentType: template.agentType,
    ...(template.clusterSelector ? { clusterSelector: compileLabelSelector(template.clusterSelector) } : {}),
    ...(template.near
      ? {
          near: {
            task: template.near.task,
            maxRTT: template.near.maxRTT,
            maxRttMs: parseMaxRtt(template.near.maxRTT),
          },
        }
      : {}),
  };
  const workload = template.kubernetes?.workload;
  if (template.agentType === "Kubernetes" && workload) {
    const spec = workload.template.spec as {
      nodeSelector?: Record<string, string>;
      containers?: ContainerLike[];
      initContainers?: ContainerLike[];
    };
    return {
      ...base,
      nodeSelector: { ...spec.nodeSelector, ...template.nodeSelector },
      replicas: workload.kind === "DaemonSet" ? 1 : (workload.replicas ?? 1),
      daemonSet: workload.kind === "DaemonSet",
      request: podRequest(spec),
    };
  }
  // Raw processes and Docker containers declare no requests: they need a node, not capacity.
  const replicas =
    template.agentType === "Raw"
      ? (template.raw?.replicas ?? 1)
      : template.agentType === "Docker"
        ? (template.docker?.replicas ?? 1)
        : 1;
  return {
    ...base,
    nodeSelector: { ...template.nodeSelector },
    replicas,
    daemonSet: false,
    request: { [POD_COUNT]: 1000 },
  };
}

/**
 * What each agent runtime runs, as its `agentTypes` says (operators/agent/runtimes/): an agent
 * drops any other Task it is handed, so placement must never send one there.
 */
export const RUNTIME_AGENT_TYPES: Readonly<Record<string, readonly AgentType[]>> = {
  kubernetes: ["Kubernetes"],
  process: ["Raw"],
  docker: ["Docker"],
};

/** Agent runtimes that run an agentType. */
export function runtimesFor(agentType: AgentType): readonly string[] {
  // Asked once per cluster per task: derived from a constant table, so worked out once per type.
  let runtimes = RUNTIMES_BY_TYPE.get(agentType);
  if (!runtimes) {
    runtimes = Object.keys(RUNTIME_AGENT_TYPES).filter((runtime) =>
      RUNTIME_AGENT_TYPES[runtime]?.includes(agentType),
    );
    RUNTIMES_BY_TYPE.set(agentType, runtimes);
  }
  return runtimes;
}

const RUNTIMES_BY_TYPE = new Map<AgentType, readonly string[]>();
