// Messages of realistic shape and size for the tunnel benchmark, built with the agent's own
// report functions so they grow when the real reports do.
import {
  nodeObject,
  type ObservedNode,
  type ObservedPod,
  podObject,
} from "../../../operators/agent/index.ts";
import type { Delta, KubeObject, Report } from "../../../operators/lib/tunnel/index.ts";

const CLUSTER = "bench";

function observedNodes(count: number): ObservedNode[] {
  return Array.from({ length: count }, (_, i) => ({
    name: `gpu-${i}`,
    labels: {
      "kubernetes.io/hostname": `gpu-${i}`,
      "kubernetes.io/os": "linux",
      "kubernetes.io/arch": "amd64",
      "nvidia.com/gpu": "true",
    },
    annotations: { "node.alpha.kubernetes.io/ttl": "0" },
    capacity: { cpu: "32", memory: "131072Mi", pods: "110", "nvidia.com/gpu": "8" },
    allocatable: { cpu: "31800m", memory: "130000Mi", pods: "110", "nvidia.com/gpu": "8" },
    nodeInfo: {
      architecture: "amd64",
      operatingSystem: "linux",
      kernelVersion: "6.8.0-45-generic",
      osImage: "Ubuntu 24.04.1 LTS",
      agentVersion: "0.1.0",
      containerRuntimeVersion: "containerd://1.7.22",
      kubeletVersion: "v1.34.4",
    },
    addresses: [
      { type: "InternalIP", address: `172.30.0.${10 + i}` },
      { type: "Hostname", address: `gpu-${i}` },
    ],
    conditions: [
      { type: "Ready", status: "True", reason: "KubeletReady", lastTransitionTime: "2026-11-29T20:00:00Z" },
      { type: "DiskPressure", status: "False", reason: "KubeletHasNoDiskPressure" },
      { type: "MemoryPressure", status: "False", reason: "KubeletHasSufficientMemory" },
    ],
  }));
}

function observedPods(count: number, nodes: number): ObservedPod[] {
  return Array.from({ length: count }, (_, i): ObservedPod => {
    const job = `job-${Math.floor(i / 4)}`;
    return {
      name: `${job}-rollout-6d9f8b7c5d-${i.toString(36).padStart(5, "x")}`,
      namespace: "rlark-system",
      task: `${job}-rollout`,
      taskUid: `8c5e2f0a-3b1d-4c7e-9a2b-${String(i).padStart(12, "0")}`,
      generation: 1,
      job,
      node: `gpu-${i % nodes}`,
      index: i % 4,
      phase: "Running",
      state: "Running",
      ready: true,
      podIP: `10.244.${i % nodes}.${(i % 250) + 2}`,
      hostIP: `172.30.0.${10 + (i % nodes)}`,
      restarts: i % 7 === 0 ? 1 : 0,
      startTime: "2026-11-29T21:00:00Z",
    };
  });
}

/** An agent's status report: `nodes` Nodes and `pods` Pods, as the kubernetes agent sends them. */
export function statusReport(nodes = 3, pods = 50, cluster = CLUSTER): Omit<Report, "type"> {
  const observedNode = observedNodes(nodes);
  const observedPod = observedPods(pods, nodes);
  return {
    nodes: observedNode.map((n) => nodeObject(cluster, n, observedPod)),
    pods: observedPod.map((p) => podObject(cluster, p)),
    tasks: [],
    capabilities: [{ name: "runtime/kubernetes", process: "RUNNING", health: "READY" }],
  };
}

/** A Task as the hub hands it to an agent. */
export function taskObject(i: number): KubeObject {
  return {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Task",
    metadata: {
      name: `job-${i}-rollout`,
      namespace: `agent-${CLUSTER}`,
      uid: `8c5e2f0a-3b1d-4c7e-9a2b-${String(i).padStart(12, "0")}`,
      generation: 1,
      labels: { "rlinf.io/job": `job-${i}`, "rlinf.io/task": "rollout" },
    },
    spec: {
      job: `job-${i}`,
      task: "rollout",
      role: "Rollout",
      agentType: "Kubernetes",
      cluster: CLUSTER,
      nodeSelector: { "nvidia.com/gpu": "true" },
      kubernetes: {
        workload: {
          kind: "Deployment",
          replicas: 2,
          template: {
            namespace: "rlark-system",
            spec: {
              containers: [
                {
                  name: "main",
                  image: "registry.local/rlark/rollout:1",
                  args: ["--actor", `job-${i}-actor`, "--steps", "1000"],
                  env: [{ name: "RLARK_JOB", value: `job-${i}` }],
                  resources: {
                    requests: { cpu: "4", memory: "16Gi", "nvidia.com/gpu": "1" },
                    limits: { "nvidia.com/gpu": "1" },
                  },
                },
              ],
            },
          },
        },
      },
    },
  };
}

/** The delta the hub sends when one Task changes. */
export function taskDelta(generation: number): Delta {
  return { type: "delta", generation, upserts: [taskObject(generation)], deletes: [] };
}
