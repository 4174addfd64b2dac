// What the simulated agents send and the hub hands them: a cluster's status report as the
// kubernetes agent builds it (the tunnel benchmark's payloads), and a small Task as the probe.
import type { KubeObject, Report } from "../../../operators/lib/tunnel/index.ts";
import { statusReport } from "../agent/payloads.ts";

/** Wall-clock milliseconds with sub-millisecond resolution, comparable across processes. */
export function wallNow(): number {
  return performance.timeOrigin + performance.now();
}

/** 10 Nodes and 20 Pods: a small cluster's report, the same every 10 s once it has settled. */
export function clusterReport(cluster: string): Omit<Report, "type"> {
  return statusReport(10, 20, cluster);
}

/** A Task placed on `cluster`: its creation becomes one delta to that cluster's agent. */
export function probeTask(cluster: string, name: string): KubeObject {
  return {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Task",
    metadata: {
      name,
      namespace: `agent-${cluster}`,
      labels: { "rlinf.io/job": name, "rlinf.io/task": "probe" },
    },
    spec: {
      job: name,
      task: "probe",
      role: "Probe",
      agentType: "Kubernetes",
      cluster,
      kubernetes: {
        workload: {
          kind: "Deployment",
          replicas: 1,
          template: { spec: { containers: [{ name: "main", image: "registry.local/probe:1" }] } },
        },
      },
    },
  };
}
