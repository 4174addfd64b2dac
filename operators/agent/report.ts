// What the agent tells the hub: the runtime's observations as Kubernetes-shaped Node, Pod and
// Task-status objects in the cluster's `agent-<cluster>` namespace (seed 000 §4, §9).
import {
  API_VERSION,
  type DomainPeer,
  type DomainTraffic,
  JOB_LABEL,
  namespaceFor,
  TASK_LABEL,
} from "../api/index.ts";
import type { KubeObject } from "../lib/tunnel/index.ts";
import type {
  ObservedBundle,
  ObservedNode,
  ObservedPod,
  ObservedWorkload,
  RuntimeAddon,
  RuntimeBundle,
  RuntimeSnapshot,
  RuntimeTask,
} from "./runtimes/types.ts";

export function nodeObject(cluster: string, node: ObservedNode, pods: readonly ObservedPod[]): KubeObject {
  const ready = node.conditions.find((c) => c.type === "Ready")?.status === "True";
  return {
    apiVersion: API_VERSION,
    kind: "Node",
    metadata: {
      name: node.name,
      namespace: namespaceFor(cluster),
      labels: node.labels,
      annotations: node.annotations,
    },
    spec: { unschedulable: node.unschedulable ?? false },
    status: {
      phase: ready ? "Online" : "Offline",
      addresses: node.addresses,
      capacity: node.capacity,
      allocatable: node.allocatable,
      requested: node.requested ?? requestedOn(node.name, pods),
      nodeInfo: node.nodeInfo,
      ...(node.disk ? { disk: node.disk } : {}),
      ...(node.images ? { images: node.images } : {}),
      conditions: node.conditions,
    },
  };
}

/**
 * For runtimes that cannot sum requests (Raw processes declare none): count the pods, so the hub
 * still sees the node is in use.
 */
function requestedOn(node: string, pods: readonly ObservedPod[]): Record<string, string> {
  const running = pods.filter((p) => p.node === node && (p.phase === "Running" || p.phase === "Pending"));
  return { pods: String(running.length) };
}

/** `<namespace>/<name>` of a pod in this cluster, as {@link domainIPs} keys it. */
const podKey = (namespace: string | undefined, name: string): string => `${namespace ?? ""}/${name}`;

/**
 * The virtual IP each of this cluster's pods holds, by {@link podKey}, from the DomainPeers the
 * hub handed over (the Domain controller's allocation, seed 000 §2).
 */
export function domainIPs(cluster: string, peers: readonly DomainPeer[]): Map<string, string> {
  const here = namespaceFor(cluster);
  const ips = new Map<string, string>();
  for (const peer of peers)
    for (const pod of peer.spec.pods ?? [])
      if (!pod.globalNamespace || pod.globalNamespace === here)
        ips.set(podKey(pod.namespace, pod.name), pod.ip);
  return ips;
}

/** The held DomainPeers' live figures, as DomainPeers carrying only status.traffic. */
export function trafficObjects(
  cluster: string,
  peers: readonly DomainPeer[],
  stats: { traffic(domain: string): DomainTraffic | undefined },
): KubeObject[] {
  return peers.flatMap((peer) => {
    const traffic = stats.traffic(peer.metadata.name);
    return traffic
      ? [
          {
            apiVersion: API_VERSION,
            kind: "DomainPeer",
            metadata: { name: peer.metadata.name, namespace: namespaceFor(cluster) },
            status: { traffic },
          },
        ]
      : [];
  });
}

export function podObject(
  cluster: string,
  pod: ObservedPod,
  domainIPs: ReadonlyMap<string, string> = new Map(),
): KubeObject {
  const domainIP = domainIPs.get(podKey(pod.namespace, pod.name));
  return {
    apiVersion: API_VERSION,
    kind: "Pod",
    metadata: {
      name: pod.name,
      namespace: namespaceFor(cluster),
      // Like the Task's own label: the template name, not the `<job>-<task>` object name.
      labels: { [JOB_LABEL]: pod.job, [TASK_LABEL]: templateName(pod) },
    },
    spec: { task: pod.task, job: pod.job, node: pod.node, namespace: pod.namespace, uid: pod.taskUid },
    status: {
      phase: pod.phase,
      ...(pod.podIP ? { podIP: pod.podIP } : {}),
      ...(pod.hostIP ? { hostIP: pod.hostIP } : {}),
      ...(domainIP ? { domainIP } : {}),
      restarts: pod.restarts,
      ...(pod.startTime ? { startTime: pod.startTime } : {}),
      ...(pod.reason ? { reason: pod.reason } : {}),
      ...(pod.message ? { message: pod.message } : {}),
      containerStatuses: pod.containers ?? [
        {
          name: pod.container ?? templateName(pod),
          ready: pod.ready,
          restartCount: pod.restarts,
          state: pod.state,
          ...(pod.exitCode === undefined ? {} : { exitCode: pod.exitCode }),
          ...(pod.reason ? { reason: pod.reason } : {}),
          ...(pod.startTime ? { startedAt: pod.startTime } : {}),
          ...(pod.finishTime ? { finishedAt: pod.finishTime } : {}),
        },
      ],
    },
  };
}

function templateName(pod: ObservedPod): string {
  return pod.task.startsWith(`${pod.job}-`) ? pod.task.slice(pod.job.length + 1) : pod.task;
}

export type TaskPhase = "Pending" | "Running" | "Succeeded" | "Failed";

export interface TaskStatus {
  phase: TaskPhase;
  replicas: number;
  readyReplicas: number;
  observedNodes: string[];
  observedGeneration?: number;
  reason?: string;
  message?: string;
  exitCode?: number;
  startTime?: string;
  completionTime?: string;
}

/**
 * A Task's phase from its pods, as the Job controller expects it: Running when every replica is
 * ready, Succeeded when a run-to-completion task's replicas all exited 0, Failed when one failed.
 */
export function taskStatus(
  task: RuntimeTask,
  pods: readonly ObservedPod[],
  workload?: ObservedWorkload,
): TaskStatus {
  const mine = pods.filter((p) => p.task === task.metadata.name && !p.terminating);
  if (workload && !workload.terminating) return workloadStatus(task, mine, workload);
  const replicas = replicasOf(task);
  const runToCompletion = isRunToCompletion(task);
  const ready = mine.filter((p) => p.phase === "Running" && p.ready).length;
  const failed = mine.find(
    (p) => p.phase === "Failed" && (runToCompletion || p.reason !== "CrashLoopBackOff"),
  );
  const succeeded = mine.filter((p) => p.phase === "Succeeded").length;
  const starts = mine
    .map((p) => p.startTime)
    .filter((s): s is string => s !== undefined)
    .sort();
  const finishes = mine
    .map((p) => p.finishTime)
    .filter((s): s is string => s !== undefined)
    .sort();
  const base = {
    replicas,
    readyReplicas: ready,
    observedNodes: [...new Set(mine.map((p) => p.node))].sort(),
    ...(task.metadata.generation === undefined ? {} : { observedGeneration: task.metadata.generation }),
    ...(starts[0] ? { startTime: starts[0] } : {}),
  };
  if (failed && runToCompletion) {
    return {
      ...base,
      phase: "Failed",
      reason: failed.reason ?? "Error",
      message: `pod ${failed.name} failed${failed.exitCode === undefined ? "" : ` with exit code ${failed.exitCode}`}`,
      ...(failed.exitCode === undefined ? {} : { exitCode: failed.exitCode }),
      ...(finishes.at(-1) ? { completionTime: finishes.at(-1) } : {}),
    };
  }
  if (runToCompletion && replicas > 0 && succeeded >= replicas) {
    return {
      ...base,
      phase: "Succeeded",
      exitCode: 0,
      ...(finishes.at(-1) ? { completionTime: finishes.at(-1) } : {}),
    };
  }
  if (ready + succeeded >= replicas && mine.length > 0) return { ...base, phase: "Running" };
  // The runtime's why (a bad image, a missing device) goes on the Task with its reason.
  const waiting = mine.find((p) => p.reason);
  return {
    ...base,
    phase: "Pending",
    ...(waiting?.reason ? { reason: waiting.reason } : {}),
    ...(waiting?.message ? { message: `pod ${waiting.name}: ${waiting.message}` } : {}),
  };
}

/** With a native workload (kubernetes), its own counts and outcome say more than the pods. */
function workloadStatus(
  task: RuntimeTask,
  pods: readonly ObservedPod[],
  workload: ObservedWorkload,
): TaskStatus {
  const starts = pods
    .map((p) => p.startTime)
    .filter((s): s is string => s !== undefined)
    .sort();
  const base = {
    replicas: workload.replicas,
    readyReplicas: workload.readyReplicas,
    observedNodes: [...new Set(pods.map((p) => p.node).filter((n) => n !== ""))].sort(),
    ...(task.metadata.generation === undefined ? {} : { observedGeneration: task.metadata.generation }),
    ...(starts[0] ? { startTime: starts[0] } : {}),
  };
  if (workload.finished === "Failed") {
    return {
      ...base,
      phase: "Failed",
      reason: workload.reason ?? "Failed",
      message: workload.message ?? `job ${workload.name} failed`,
      ...(workload.exitCode === undefined ? {} : { exitCode: workload.exitCode }),
    };
  }
  if (workload.finished === "Complete")
    return { ...base, phase: "Succeeded", exitCode: workload.exitCode ?? 0 };
  if (workload.kind === "Job" && (workload.active ?? 0) > 0 && pods.some((p) => p.phase === "Running")) {
    return { ...base, phase: "Running" };
  }
  if (workload.replicas > 0 && workload.readyReplicas >= workload.replicas)
    return { ...base, phase: "Running" };
  const waiting = pods.find((p) => p.reason);
  return { ...base, phase: "Pending", ...(waiting?.reason ? { reason: waiting.reason } : {}) };
}

function replicasOf(task: RuntimeTask): number {
  if (task.spec.raw) return task.spec.raw.replicas ?? 1;
  if (task.spec.docker) return task.spec.docker.replicas ?? 1;
  const workload = (task.spec.kubernetes as { workload?: { replicas?: number } } | undefined)?.workload;
  return workload?.replicas ?? 1;
}

function isRunToCompletion(task: RuntimeTask): boolean {
  if (task.spec.raw) return (task.spec.raw.kind ?? "Job") === "Job";
  if (task.spec.docker) return (task.spec.docker.restartPolicy ?? "Never") !== "Always";
  return (task.spec.kubernetes as { workload?: { kind?: string } } | undefined)?.workload?.kind === "Job";
}

export function taskStatusObject(cluster: string, task: RuntimeTask, observed: RuntimeSnapshot): KubeObject {
  const workload = observed.workloads?.find((w) => w.task === task.metadata.name && !w.terminating);
  const status = taskStatus(task, observed.pods, workload);
  // Why a Task waits when its objects could not be applied: the API server's own words.
  const problem = observed.applyProblems?.find((p) => p.task === task.metadata.name);
  return {
    apiVersion: API_VERSION,
    kind: "Task",
    metadata: { name: task.metadata.name, namespace: namespaceFor(cluster) },
    status:
      problem && status.phase === "Pending"
        ? { ...status, reason: problem.reason, message: problem.message.slice(0, 1024) }
        : status,
  };
}

/**
 * Tasks no longer desired that still have something in the cluster (pods, workloads, volume
 * claims): the hub keeps their cleanup finalizer until this list stops naming them.
 */
export function lingeringTasks(
  cluster: string,
  desired: readonly RuntimeTask[],
  observed: RuntimeSnapshot,
): KubeObject[] {
  const wanted = new Set(desired.map((t) => t.metadata.name));
  const present = new Set([
    ...observed.pods.map((p) => p.task),
    ...(observed.workloads ?? []).map((w) => w.task),
    ...(observed.volumes ?? []).map((v) => v.task),
  ]);
  return [...present]
    .filter((name) => !wanted.has(name))
    .sort()
    .map((name) => ({
      apiVersion: API_VERSION,
      kind: "Task",
      metadata: { name, namespace: namespaceFor(cluster) },
      status: {
        phase: "Pending",
        reason: "Terminating",
        message: "workloads, pods or claims still being removed",
      },
    }));
}

/**
 * Each Addon's status on this cluster, as AddonRelease status objects: the desired ones and
 * those still being uninstalled (the hub keeps a deleted release until this list stops naming
 * it). A runtime that cannot install Addons (`installs` false) reports every one Failed, naming
 * itself (`runtimeKind`).
 */
export function addonStatusObjects(
  cluster: string,
  desired: readonly RuntimeAddon[],
  observed: RuntimeSnapshot,
  installs: boolean,
  runtimeKind: string,
): KubeObject[] {
  const object = (name: string, status: Record<string, unknown>): KubeObject => ({
    apiVersion: API_VERSION,
    kind: "AddonRelease",
    metadata: { name, namespace: namespaceFor(cluster) },
    status,
  });
  if (!installs) {
    return desired.map((addon) =>
      object(addon.metadata.name, {
        phase: "Failed",
        message: `this agent runs the ${runtimeKind} runtime, which has no Kubernetes API to install into; Addons need a cluster whose agent runs the kubernetes runtime`,
        ...(addon.metadata.generation === undefined ? {} : { observedGeneration: addon.metadata.generation }),
      }),
    );
  }
  const seen = new Map((observed.addons ?? []).map((a) => [a.name, a]));
  const out: KubeObject[] = [];
  for (const addon of desired) {
    const state = seen.get(addon.metadata.name);
    // Not looked at yet: Pending, for the generation handed over.
    const generation = state?.generation ?? addon.metadata.generation;
    out.push(
      object(addon.metadata.name, {
        phase: state?.phase ?? "Pending",
        ...(state?.version ? { version: state.version } : {}),
        ...(state?.message ? { message: state.message } : {}),
        ...(generation === undefined ? {} : { observedGeneration: generation }),
      }),
    );
    seen.delete(addon.metadata.name);
  }
  for (const gone of seen.values()) {
    out.push(
      object(gone.name, {
        phase: gone.phase,
        ...(gone.version ? { version: gone.version } : {}),
        ...(gone.message ? { message: gone.message } : {}),
      }),
    );
  }
  return out;
}

/**
 * Each Bundle's status on this cluster, as BundleRelease status objects: the desired ones and
 * those still being removed (the hub keeps a deleted release until this list stops naming it). A
 * runtime that cannot apply Bundles (`applies` false) reports every one Failed, naming itself.
 */
export function bundleStatusObjects(
  cluster: string,
  desired: readonly RuntimeBundle[],
  observed: RuntimeSnapshot,
  applies: boolean,
  runtimeKind: string,
): KubeObject[] {
  const object = (name: string, status: Record<string, unknown>): KubeObject => ({
    apiVersion: API_VERSION,
    kind: "BundleRelease",
    metadata: { name, namespace: namespaceFor(cluster) },
    status,
  });
  const generationOf = (g: number | undefined) => (g === undefined ? {} : { observedGeneration: g });
  if (!applies) {
    return desired.map((bundle) =>
      object(bundle.metadata.name, {
        phase: "Failed",
        message: `this agent runs the ${runtimeKind} runtime, which has no Kubernetes API to apply to; Bundles need a cluster whose agent runs the kubernetes runtime (or an agentless Cluster)`,
        ...generationOf(bundle.metadata.generation),
      }),
    );
  }
  const seen = new Map((observed.bundles ?? []).map((b) => [b.name, b]));
  const out: KubeObject[] = [];
  for (const bundle of desired) {
    const state = seen.get(bundle.metadata.name);
    seen.delete(bundle.metadata.name);
    out.push(
      object(bundle.metadata.name, {
        ...(state ? bundleStatus(state) : { phase: "Pending" }),
        ...generationOf(state?.generation ?? bundle.metadata.generation),
      }),
    );
  }
  for (const gone of seen.values()) out.push(object(gone.name, bundleStatus(gone)));
  return out;
}

function bundleStatus(state: ObservedBundle): Record<string, unknown> {
  const drift = state.drift;
  return {
    phase: state.phase,
    ...(state.revision ? { revision: state.revision } : {}),
    ...(state.message ? { message: state.message.slice(0, 4096) } : {}),
    objects: state.objects.slice(0, 500).map((o) => ({
      ...o,
      ...(o.message ? { message: o.message.slice(0, 1024) } : {}),
    })),
    ...(drift
      ? {
          conditions: [
            {
              type: "Drifted",
              status: drift.active ? "True" : "False",
              reason: drift.active ? "Drifted" : drift.corrected ? "Corrected" : "InSync",
              message: drift.message.slice(0, 4096),
              lastTransitionTime: drift.at,
            },
          ],
        }
      : {}),
  };
}
