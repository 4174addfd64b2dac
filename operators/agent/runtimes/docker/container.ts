// A desired pod as the engine's create request, and an inspected container as an observed pod.
// Pure, so the mapping of restart policies, limits and states is read in one place.
import type Docker from "dockerode";
import type { ContainerState, DockerWorkload, ObservedPod, PodPhase } from "../types.ts";
import { containerName, type DesiredContainer, LABELS } from "./spec.ts";

const RESTART: Record<NonNullable<DockerWorkload["restartPolicy"]>, string> = {
  Never: "no",
  OnFailure: "on-failure",
  Always: "always",
};

export interface CreateContext {
  /** The value of the owner label: this runtime's containers among others on a shared engine. */
  owner: string;
  /** Each container's json-file log is at most this many bytes, plus one rotated file. */
  logMaxBytes: number;
}

export function createOptions(pod: DesiredContainer, ctx: CreateContext): Docker.ContainerCreateOptions {
  const { docker, task } = pod;
  const job = task.spec.job ?? task.metadata.labels?.[LABELS.job] ?? "";
  const limits = docker.resources ?? {};
  return {
    name: containerName(pod.namespace, pod.name),
    Image: docker.image,
    ...(docker.command ? { Entrypoint: docker.command } : {}),
    ...(docker.args ? { Cmd: docker.args } : {}),
    Env: (docker.env ?? []).map((e) => `${e.name}=${e.value ?? ""}`),
    Labels: {
      [LABELS.owner]: ctx.owner,
      [LABELS.namespace]: pod.namespace,
      [LABELS.pod]: pod.name,
      [LABELS.job]: job,
      [LABELS.task]: task.metadata.name,
      [LABELS.template]: task.spec.task ?? task.metadata.name,
      [LABELS.taskUid]: task.metadata.uid ?? "",
      [LABELS.replica]: String(pod.index),
      [LABELS.revision]: pod.revision,
      [LABELS.generation]: String(task.metadata.generation ?? ""),
    },
    HostConfig: {
      // An init as PID 1: the program gets SIGTERM on a stop and its zombies are reaped.
      Init: true,
      Binds: (docker.mounts ?? []).map((m) => `${m.hostPath}:${m.containerPath}${m.readOnly ? ":ro" : ""}`),
      Devices: (docker.devices ?? []).map((d) => ({
        PathOnHost: d,
        PathInContainer: d,
        CgroupPermissions: "rwm",
      })),
      RestartPolicy: { Name: RESTART[docker.restartPolicy ?? "Never"] },
      LogConfig: { Type: "json-file", Config: { "max-size": String(ctx.logMaxBytes), "max-file": "2" } },
      ...(limits.cpus ? { NanoCpus: Math.round(limits.cpus * 1e9) } : {}),
      ...(limits.memoryMiB ? { Memory: limits.memoryMiB * 1024 * 1024 } : {}),
    },
  };
}

/** The engine's zero time, for a container that never started or never finished. */
function time(value: string | undefined): string | undefined {
  return value && !value.startsWith("0001-") ? value : undefined;
}

/** What the container's state means as a pod. */
function phaseOf(info: Docker.ContainerInspectInfo): {
  phase: PodPhase;
  state: ContainerState;
  reason?: string;
  message?: string;
} {
  const s = info.State;
  if (s.Restarting) return { phase: "Running", state: "Waiting", reason: "CrashLoopBackOff" };
  if (s.Running) return { phase: "Running", state: "Running" };
  if (s.Status === "created") return { phase: "Pending", state: "Waiting", reason: "ContainerCreating" };
  if (s.Status === "exited") {
    if (s.ExitCode === 0) return { phase: "Succeeded", state: "Terminated", reason: "Completed" };
    return {
      phase: "Failed",
      state: "Terminated",
      reason: s.OOMKilled ? "OOMKilled" : "Error",
      ...(s.Error ? { message: s.Error } : {}),
    };
  }
  return { phase: "Unknown", state: "Waiting", reason: s.Status, ...(s.Error ? { message: s.Error } : {}) };
}

export function observedPod(info: Docker.ContainerInspectInfo, node: string, hostIP: string): ObservedPod {
  const labels = info.Config.Labels ?? {};
  const { phase, state, reason, message } = phaseOf(info);
  const generation = Number.parseInt(labels[LABELS.generation] ?? "", 10);
  const started = time(info.State.StartedAt);
  const finished = time(info.State.FinishedAt);
  const ran = info.State.Status === "exited" || info.State.Restarting;
  const podIP = Object.values(info.NetworkSettings?.Networks ?? {}).find((n) => n.IPAddress)?.IPAddress;
  return {
    name: labels[LABELS.pod] ?? "",
    namespace: labels[LABELS.namespace] ?? "",
    task: labels[LABELS.task] ?? "",
    taskUid: labels[LABELS.taskUid] ?? "",
    ...(Number.isFinite(generation) ? { generation } : {}),
    job: labels[LABELS.job] ?? "",
    node,
    index: Number.parseInt(labels[LABELS.replica] ?? "0", 10) || 0,
    phase,
    state,
    ready: state === "Running",
    ...(podIP ? { podIP } : {}),
    hostIP,
    restarts: info.RestartCount ?? 0,
    ...(ran ? { exitCode: info.State.ExitCode } : {}),
    ...(reason ? { reason } : {}),
    ...(message ? { message } : {}),
    ...(started ? { startTime: started } : {}),
    ...(finished && state !== "Running" ? { finishTime: finished } : {}),
    ...(info.State.Pid ? { pid: info.State.Pid } : {}),
    container: labels[LABELS.template] ?? "",
    containers: [
      {
        name: labels[LABELS.template] ?? "",
        image: info.Config.Image,
        ready: state === "Running",
        restartCount: info.RestartCount ?? 0,
        state,
        ...(reason ? { reason } : {}),
        ...(message ? { message } : {}),
        ...(ran ? { exitCode: info.State.ExitCode } : {}),
        ...(started ? { startedAt: started } : {}),
        ...(finished && state !== "Running" ? { finishedAt: finished } : {}),
      },
    ],
  };
}
