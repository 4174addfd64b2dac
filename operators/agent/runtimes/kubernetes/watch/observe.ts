// Cluster objects → the runtime contract's observed shapes, without I/O: Nodes (with requested,
// the sum of what the non-terminated pods bound to them ask for), the Tasks' Pods, workloads and
// volume claims.
import { constants } from "node:os";
import type {
  KubernetesObject,
  V1Container,
  V1ContainerStatus,
  V1DaemonSet,
  V1Deployment,
  V1Job,
  V1Node,
  V1PersistentVolumeClaim,
  V1Pod,
  V1StatefulSet,
} from "@kubernetes/client-node";
import {
  COMPONENT_LABEL,
  IMAGE_PRE_PULL_COMPONENT,
  type ImagePull,
  JOB_LABEL,
  TASK_GENERATION_ANNOTATION,
  TASK_NAME_LABEL,
  TASK_UID_ANNOTATION,
} from "../../../../api/index.ts";
import { CAPABILITY_CONDITION_PREFIX } from "../../../../lib/capability-condition.ts";
import type {
  ContainerState,
  NodeAddress,
  NodeCondition,
  ObservedContainer,
  ObservedNode,
  ObservedPod,
  ObservedVolume,
  ObservedWorkload,
  PodPhase,
  WorkloadKind,
} from "../../types.ts";
import { addQuantity, formatQuantity } from "./quantity.ts";

const CONTROL_PLANE_LABELS = ["node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master"];
const ADDRESS_TYPES = new Set(["InternalIP", "ExternalIP", "Hostname", "InternalDNS", "ExternalDNS"]);
const CONDITION_STATUS = new Set(["True", "False", "Unknown"]);

const time = (v: Date | string | undefined): string | undefined =>
  v === undefined ? undefined : v instanceof Date ? v.toISOString() : String(v);

export const isTerminated = (pod: V1Pod): boolean =>
  pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed";

/** The effective request of one pod, as the scheduler counts it (init containers, sidecars, overhead). */
export function podRequests(pod: V1Pod): Map<string, number> {
  const sum = new Map<string, number>();
  const add = (target: Map<string, number>, c: V1Container | undefined) => {
    for (const [r, q] of Object.entries(c?.resources?.requests ?? {})) addQuantity(target, r, String(q));
  };
  const inits = pod.spec?.initContainers ?? [];
  const sidecars = inits.filter((c) => c.restartPolicy === "Always");
  for (const c of pod.spec?.containers ?? []) add(sum, c);
  for (const c of sidecars) add(sum, c);
  // a plain init container runs alone (with the sidecars started before it): the pod needs the larger
  const running = new Map<string, number>();
  for (const c of inits) {
    if (c.restartPolicy === "Always") {
      add(running, c);
      continue;
    }
    const peak = new Map(running);
    add(peak, c);
    for (const [r, v] of peak) if (v > (sum.get(r) ?? 0)) sum.set(r, v);
  }
  for (const [r, q] of Object.entries(pod.spec?.overhead ?? {})) addQuantity(sum, r, String(q));
  return sum;
}

/** requested per node: the sum of the effective requests of the non-terminated pods bound to it. */
export function requestedByNode(pods: Iterable<V1Pod>): Map<string, Record<string, string>> {
  const sums = new Map<string, Map<string, number>>();
  for (const pod of pods) {
    const node = pod.spec?.nodeName;
    if (!node || isTerminated(pod)) continue;
    // image pre-pull's pull pods live a second or so with 1m CPU: counting them would only
    // make the Node's requested (a figure the status branch records) flicker
    if (pod.metadata?.labels?.[COMPONENT_LABEL] === IMAGE_PRE_PULL_COMPONENT) continue;
    let s = sums.get(node);
    if (!s) {
      s = new Map();
      sums.set(node, s);
    }
    for (const [r, v] of podRequests(pod)) s.set(r, (s.get(r) ?? 0) + v);
  }
  const out = new Map<string, Record<string, string>>();
  for (const [node, s] of sums) {
    const entries = [...s].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    out.set(node, Object.fromEntries(entries.map(([r, v]) => [r, formatQuantity(r, v)])));
  }
  return out;
}

const quantities = (list: Record<string, unknown> | undefined): Record<string, string> =>
  Object.fromEntries(Object.entries(list ?? {}).map(([k, v]) => [k, String(v)]));

export function observeNode(
  node: V1Node,
  requested: Record<string, string> | undefined,
  agentVersion: string,
  disk?: { usedBytes: number; totalBytes: number },
  images?: ImagePull[],
): ObservedNode {
  const labels = { ...(node.metadata?.labels ?? {}) };
  const info = node.status?.nodeInfo;
  const addresses: NodeAddress[] = (node.status?.addresses ?? [])
    .filter((a) => ADDRESS_TYPES.has(a.type))
    .map((a) => ({ type: a.type as NodeAddress["type"], address: a.address }));
  const isCapability = (c: { type: string }) => c.type.startsWith(CAPABILITY_CONDITION_PREFIX);
  const capabilityConditions = (node.status?.conditions ?? []).filter(isCapability).map((c) => ({
    type: c.type,
    ...(c.reason ? { reason: c.reason } : {}),
    ...(c.message ? { message: c.message } : {}),
    ...(c.lastHeartbeatTime ? { lastHeartbeatTime: time(c.lastHeartbeatTime) } : {}),
  }));
  const conditions: NodeCondition[] = (node.status?.conditions ?? [])
    .filter((c) => CONDITION_STATUS.has(c.status) && !isCapability(c))
    .map((c) => ({
      type: c.type,
      status: c.status as NodeCondition["status"],
      ...(c.reason ? { reason: c.reason } : {}),
      ...(c.message ? { message: c.message } : {}),
      ...(c.lastTransitionTime ? { lastTransitionTime: time(c.lastTransitionTime) } : {}),
    }));
  return {
    name: node.metadata?.name ?? "",
    labels,
    annotations: { ...(node.metadata?.annotations ?? {}) },
    capacity: quantities(node.status?.capacity),
    allocatable: quantities(node.status?.allocatable),
    nodeInfo: {
      architecture: info?.architecture ?? "",
      operatingSystem: info?.operatingSystem ?? "",
      kernelVersion: info?.kernelVersion ?? "",
      osImage: info?.osImage ?? "",
      agentVersion,
      ...(info?.containerRuntimeVersion ? { containerRuntimeVersion: info.containerRuntimeVersion } : {}),
      ...(info?.kubeletVersion ? { kubeletVersion: info.kubeletVersion } : {}),
    },
    ...(disk ? { disk } : {}),
    ...(images ? { images } : {}),
    addresses,
    conditions,
    ...(capabilityConditions.length > 0 ? { capabilityConditions } : {}),
    unschedulable: node.spec?.unschedulable === true,
    requested: requested ?? {},
    controlPlane: CONTROL_PLANE_LABELS.some((l) => l in labels),
  };
}

const SIGNALS = new Map<number, string>(Object.entries(constants.signals).map(([name, n]) => [n, name]));

function mainStatus(pod: V1Pod): V1ContainerStatus | undefined {
  const main = pod.spec?.containers[0]?.name;
  const statuses = pod.status?.containerStatuses ?? [];
  return statuses.find((s) => s.name === main) ?? statuses[0];
}

const stateOf = (s: V1ContainerStatus | undefined): ContainerState =>
  s?.state?.running ? "Running" : s?.state?.terminated ? "Terminated" : "Waiting";

/** Every container of the pod spec, in its order, with what its status says (Waiting until it has one). */
export function observeContainers(pod: V1Pod): ObservedContainer[] {
  const statuses = new Map((pod.status?.containerStatuses ?? []).map((s) => [s.name, s]));
  return (pod.spec?.containers ?? []).map((c) => {
    const s = statuses.get(c.name);
    const terminated = s?.state?.terminated ?? s?.lastState?.terminated;
    const reason = s?.state?.waiting?.reason ?? s?.state?.terminated?.reason;
    const message = s?.state?.waiting?.message ?? s?.state?.terminated?.message;
    const startedAt = time(s?.state?.running?.startedAt ?? s?.state?.terminated?.startedAt);
    const finishedAt = time(s?.state?.terminated?.finishedAt);
    const image = s?.image || c.image;
    return {
      name: c.name,
      ...(image ? { image } : {}),
      ready: s?.ready ?? false,
      restartCount: s?.restartCount ?? 0,
      state: stateOf(s),
      ...(reason ? { reason } : {}),
      ...(message ? { message } : {}),
      ...(terminated ? { exitCode: terminated.exitCode } : {}),
      ...(startedAt ? { startedAt } : {}),
      ...(finishedAt ? { finishedAt } : {}),
    };
  });
}

const PHASES = new Set(["Pending", "Running", "Succeeded", "Failed", "Unknown"]);

/** `index`: the replica index when the pod has no index label of its own (Deployment, DaemonSet). */
export function observePod(pod: V1Pod, index: number, generation?: number): ObservedPod {
  const labels = pod.metadata?.labels ?? {};
  const main = mainStatus(pod);
  const terminated = main?.state?.terminated ?? main?.lastState?.terminated;
  const state = stateOf(main);
  const phase = (PHASES.has(pod.status?.phase ?? "") ? pod.status?.phase : "Unknown") as PodPhase;
  const terminating = pod.metadata?.deletionTimestamp !== undefined;
  const ready =
    !terminating &&
    phase === "Running" &&
    (pod.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
  const restarts = (pod.status?.containerStatuses ?? []).reduce((n, s) => n + (s.restartCount ?? 0), 0);
  const reason = main?.state?.waiting?.reason ?? main?.state?.terminated?.reason ?? pod.status?.reason;
  const message = main?.state?.waiting?.message ?? main?.state?.terminated?.message ?? pod.status?.message;
  const signal = terminated?.signal ? SIGNALS.get(terminated.signal) : undefined;
  const startTime = time(
    main?.state?.running?.startedAt ?? main?.state?.terminated?.startedAt ?? pod.status?.startTime,
  );
  return {
    name: pod.metadata?.name ?? "",
    namespace: pod.metadata?.namespace ?? "",
    task: labels[TASK_NAME_LABEL] ?? "",
    taskUid: pod.metadata?.annotations?.[TASK_UID_ANNOTATION] ?? "",
    ...(generation !== undefined ? { generation } : {}),
    job: labels[JOB_LABEL] ?? "",
    node: pod.spec?.nodeName ?? "",
    index: podIndex(pod) ?? index,
    phase,
    state,
    ready,
    ...(terminating ? { terminating } : {}),
    ...(pod.status?.podIP ? { podIP: pod.status.podIP } : {}),
    ...(pod.status?.hostIP ? { hostIP: pod.status.hostIP } : {}),
    restarts,
    ...(terminated ? { exitCode: terminated.exitCode } : {}),
    ...(signal ? { signal } : {}),
    ...(reason
      ? { reason: terminating ? "Terminating" : reason }
      : terminating
        ? { reason: "Terminating" }
        : {}),
    ...(message ? { message } : {}),
    ...(startTime ? { startTime } : {}),
    ...(main?.state?.terminated?.finishedAt ? { finishTime: time(main.state.terminated.finishedAt) } : {}),
    containers: observeContainers(pod),
  };
}

/** The ordinal a StatefulSet or Indexed Job gives its pod, if any. */
export function podIndex(pod: V1Pod): number | undefined {
  const labels = pod.metadata?.labels ?? {};
  const annotations = pod.metadata?.annotations ?? {};
  const raw =
    labels["apps.kubernetes.io/pod-index"] ??
    labels["batch.kubernetes.io/job-completion-index"] ??
    annotations["batch.kubernetes.io/job-completion-index"];
  const n = raw === undefined ? Number.NaN : Number(raw);
  return Number.isInteger(n) ? n : undefined;
}

/** Replica indexes for pods without an ordinal: oldest first, by name on ties. */
export function fallbackIndexes(pods: readonly V1Pod[]): Map<V1Pod, number> {
  const sorted = [...pods].sort((a, b) => {
    const ta = time(a.metadata?.creationTimestamp) ?? "";
    const tb = time(b.metadata?.creationTimestamp) ?? "";
    if (ta !== tb) return ta < tb ? -1 : 1;
    const na = a.metadata?.name ?? "";
    const nb = b.metadata?.name ?? "";
    return na < nb ? -1 : na > nb ? 1 : 0;
  });
  return new Map(sorted.map((p, i) => [p, i]));
}

export const taskGeneration = (obj: KubernetesObject): number | undefined => {
  const g = Number(obj.metadata?.annotations?.[TASK_GENERATION_ANNOTATION]);
  return Number.isInteger(g) ? g : undefined;
};

/** One of the four workload kinds a Task renders to. */
export type AnyWorkload = V1Deployment | V1StatefulSet | V1DaemonSet | V1Job;

/** `pods`: the Task's pods, for a Job's exit code. */
export function observeWorkload(
  kind: WorkloadKind,
  obj: AnyWorkload,
  pods: readonly V1Pod[],
): ObservedWorkload {
  const meta = obj.metadata ?? {};
  const generation = taskGeneration(obj);
  const base = {
    task: meta.labels?.[TASK_NAME_LABEL] ?? "",
    taskUid: meta.annotations?.[TASK_UID_ANNOTATION] ?? "",
    ...(generation !== undefined ? { generation } : {}),
    job: meta.labels?.[JOB_LABEL] ?? "",
    kind,
    namespace: meta.namespace ?? "",
    name: meta.name ?? "",
    ...(meta.deletionTimestamp ? { terminating: true } : {}),
  };
  switch (kind) {
    case "Deployment":
    case "StatefulSet": {
      const w = obj as V1Deployment | V1StatefulSet;
      return { ...base, replicas: w.spec?.replicas ?? 1, readyReplicas: w.status?.readyReplicas ?? 0 };
    }
    case "DaemonSet": {
      const w = obj as V1DaemonSet;
      return {
        ...base,
        replicas: w.status?.desiredNumberScheduled ?? 0,
        readyReplicas: w.status?.numberReady ?? 0,
      };
    }
    case "Job": {
      const w = obj as V1Job;
      const st = w.status;
      const condition = (type: string) => st?.conditions?.find((c) => c.type === type && c.status === "True");
      const failed = condition("Failed");
      const complete = condition("Complete");
      const finished = failed ? "Failed" : complete ? "Complete" : undefined;
      const decided = failed ?? complete;
      const exitCode = jobExitCode(pods);
      return {
        ...base,
        replicas: w.spec?.parallelism ?? 1,
        readyReplicas: st?.ready ?? 0,
        succeeded: st?.succeeded ?? 0,
        failed: st?.failed ?? 0,
        active: st?.active ?? 0,
        ...(finished ? { finished } : {}),
        ...(exitCode !== undefined ? { exitCode } : {}),
        ...(decided?.reason ? { reason: decided.reason } : {}),
        ...(decided?.message ? { message: decided.message } : {}),
      };
    }
  }
}

/** A failed pod's exit code wins (non-zero first); otherwise a succeeded pod's. */
function jobExitCode(pods: readonly V1Pod[]): number | undefined {
  const codes = (phase: string) =>
    pods
      .filter((p) => p.status?.phase === phase)
      .map((p) => {
        const s = mainStatus(p);
        return (s?.state?.terminated ?? s?.lastState?.terminated)?.exitCode;
      })
      .filter((c): c is number => c !== undefined);
  const failed = codes("Failed");
  return failed.find((c) => c !== 0) ?? failed[0] ?? codes("Succeeded")[0];
}

export function observeVolume(pvc: V1PersistentVolumeClaim): ObservedVolume {
  return {
    name: pvc.metadata?.name ?? "",
    namespace: pvc.metadata?.namespace ?? "",
    task: pvc.metadata?.labels?.[TASK_NAME_LABEL] ?? "",
    ...(pvc.status?.phase ? { phase: pvc.status.phase } : {}),
    ...(pvc.metadata?.deletionTimestamp ? { terminating: true } : {}),
  };
}
