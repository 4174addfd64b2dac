// Builders for Clusters, Nodes, Job task templates and Tasks as the git source and the agents'
// reports put them in the store.

import type { Cluster, Job, Node, Task, TaskTemplate } from "../../../operators/api/index.ts";

export function cluster(
  name: string,
  options: {
    runtime?: "kubernetes" | "process" | "docker";
    /** The runtime its connected agent announced (status.runtime); default: spec.runtime. */
    agentRuntime?: "kubernetes" | "process" | "docker";
    online?: boolean;
    labels?: Record<string, string>;
    lastTransitionTime?: string;
  } = {},
): Cluster {
  return {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Cluster",
    metadata: { name, labels: options.labels ?? {} },
    spec: { runtime: options.runtime ?? "kubernetes" },
    status: {
      phase: options.online === false ? "Offline" : "Online",
      runtime: options.agentRuntime ?? options.runtime ?? "kubernetes",
      ...(options.lastTransitionTime ? { lastTransitionTime: options.lastTransitionTime } : {}),
    },
  };
}

export function node(
  clusterName: string,
  name: string,
  options: {
    labels?: Record<string, string>;
    allocatable?: Record<string, string>;
    requested?: Record<string, string>;
    unschedulable?: boolean;
    ready?: boolean;
  } = {},
): Node {
  return {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Node",
    metadata: { name, namespace: `agent-${clusterName}`, labels: options.labels ?? {} },
    spec: { unschedulable: options.unschedulable ?? false },
    status: {
      allocatable: options.allocatable ?? { cpu: "32", memory: "128Gi", pods: "110" },
      ...(options.requested ? { requested: options.requested } : {}),
      conditions: [{ type: "Ready", status: options.ready === false ? "False" : "True" }],
    },
  };
}

export function k8sTask(
  name: string,
  options: {
    kind?: "Deployment" | "StatefulSet" | "DaemonSet" | "Job";
    replicas?: number;
    requests?: Record<string, string>;
    limits?: Record<string, string>;
    nodeSelector?: Record<string, string>;
    clusterSelector?: TaskTemplate["clusterSelector"];
    head?: boolean;
  } = {},
): TaskTemplate {
  return {
    name,
    role: "Actor",
    agentType: "Kubernetes",
    ...(options.head ? { head: true } : {}),
    ...(options.nodeSelector ? { nodeSelector: options.nodeSelector } : {}),
    ...(options.clusterSelector ? { clusterSelector: options.clusterSelector } : {}),
    kubernetes: {
      workload: {
        kind: options.kind ?? "Deployment",
        ...(options.replicas !== undefined ? { replicas: options.replicas } : {}),
        template: {
          spec: {
            containers: [
              {
                name: "main",
                image: "pytorch/pytorch:2.3.0",
                resources: {
                  ...(options.requests ? { requests: options.requests } : {}),
                  ...(options.limits ? { limits: options.limits } : {}),
                },
              },
            ],
          },
        },
      },
    },
  };
}

export function rawTask(
  name: string,
  options: { nodeSelector?: Record<string, string>; kind?: "Job" | "Deployment"; replicas?: number } = {},
): TaskTemplate {
  return {
    name,
    role: "Env",
    agentType: "Raw",
    ...(options.nodeSelector ? { nodeSelector: options.nodeSelector } : {}),
    raw: {
      command: ["/bin/true"],
      kind: options.kind ?? "Job",
      ...(options.replicas !== undefined ? { replicas: options.replicas } : {}),
    },
  };
}

export function job(name: string, tasks: TaskTemplate[], extra: Partial<Job["spec"]> = {}): Job {
  return { apiVersion: "rlinf.io/v1alpha1", kind: "Job", metadata: { name }, spec: { tasks, ...extra } };
}

export type { Cluster, Job, Node, Task, TaskTemplate };
