// Whether the workloads an Addon owns have rolled out, from the fields `kubectl rollout status`
// reads: observedGeneration, then updated and ready/available counts. Pure.
import type { KubernetesObject } from "@kubernetes/client-node";

interface WorkloadFields extends KubernetesObject {
  spec?: { replicas?: number };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    updatedReplicas?: number;
    readyReplicas?: number;
    availableReplicas?: number;
    desiredNumberScheduled?: number;
    updatedNumberScheduled?: number;
    numberReady?: number;
    numberAvailable?: number;
  };
}

/** The workload kinds an Addon waits for. */
export const ROLLOUT_KINDS: ReadonlySet<string> = new Set(["Deployment", "DaemonSet", "StatefulSet"]);

/** What keeps `workload` from being rolled out, or undefined when it is. */
export function rolloutProblem(workload: KubernetesObject): string | undefined {
  const w = workload as WorkloadFields;
  const what = `${w.kind} ${w.metadata?.namespace}/${w.metadata?.name}`;
  const status = w.status ?? {};
  const generation = w.metadata?.generation ?? 0;
  if ((status.observedGeneration ?? 0) < generation)
    return `${what}: generation ${generation} not yet observed`;
  if (w.kind === "DaemonSet") {
    const desired = status.desiredNumberScheduled ?? 0;
    const updated = status.updatedNumberScheduled ?? 0;
    const ready = Math.min(status.numberReady ?? 0, status.numberAvailable ?? 0);
    if (updated < desired) return `${what}: ${updated} of ${desired} pods updated`;
    if (ready < desired) return `${what}: ${ready} of ${desired} pods ready`;
    return undefined;
  }
  const replicas = w.spec?.replicas ?? 1;
  const updated = status.updatedReplicas ?? 0;
  if (updated < replicas) return `${what}: ${updated} of ${replicas} replicas updated`;
  if ((status.replicas ?? 0) > updated)
    return `${what}: ${(status.replicas ?? 0) - updated} old replicas still running`;
  const ready = w.kind === "Deployment" ? (status.availableReplicas ?? 0) : (status.readyReplicas ?? 0);
  if (ready < replicas)
    return `${what}: ${ready} of ${replicas} replicas ${w.kind === "Deployment" ? "available" : "ready"}`;
  return undefined;
}
