// The Job's phase from its Tasks' reported phases (pure): seed 000 §6.
//
//   any task Failed                                   → Failed
//   every finishing task Succeeded (and there is one) → Succeeded
//   every task Running or Succeeded                   → Running
//   otherwise                                         → Pending
//
// Deployments, StatefulSets and DaemonSets (and Raw/Docker processes that restart always) never
// finish: a Job made only of them stays Running until it is stopped.

import type { JobTaskStatus, Task, TaskTemplate } from "../../api/index.ts";
import { clusterOf } from "../../api/index.ts";

export type RunPhase = "Pending" | "Running" | "Succeeded" | "Failed";

/** A run or a task that has its outcome. */
export function isTerminal(phase: string | undefined): phase is "Succeeded" | "Failed" {
  return phase === "Succeeded" || phase === "Failed";
}

/** A Task whose workload has started: it runs or has run. */
export function started(task: Task | undefined): boolean {
  const phase = task?.status?.phase;
  return phase === "Running" || isTerminal(phase);
}

/** Whether the task runs to completion (a batch Job, a Raw process of kind Job, a Docker container not restarted Always). */
export function finishes(template: TaskTemplate): boolean {
  switch (template.agentType) {
    case "Kubernetes":
      return template.kubernetes?.workload.kind === "Job";
    case "Raw":
      return (template.raw?.kind ?? "Job") === "Job";
    case "Docker":
      return (template.docker?.restartPolicy ?? "Never") !== "Always";
  }
}

/** One task's line in Job status, from its Task (when created) or its plan. */
export function taskStatus(
  jobName: string,
  template: TaskTemplate,
  task: Task | undefined,
  plannedCluster: string | undefined,
): JobTaskStatus {
  const taskName = `${jobName}-${template.name}`;
  if (!task) {
    return {
      name: template.name,
      taskName,
      phase: plannedCluster ? "Scheduled" : "Pending",
      ...(plannedCluster ? { cluster: plannedCluster } : {}),
    };
  }
  const s = task.status ?? {};
  const cluster = clusterOf(task.metadata.namespace);
  return {
    name: template.name,
    taskName,
    phase: s.phase ?? "Pending",
    ...(cluster ? { cluster } : {}),
    ...(s.replicas !== undefined ? { replicas: s.replicas } : {}),
    ...(s.readyReplicas !== undefined ? { readyReplicas: s.readyReplicas } : {}),
    ...(s.startTime ? { startTime: s.startTime } : {}),
    ...(s.completionTime ? { completionTime: s.completionTime } : {}),
    ...(s.reason ? { reason: s.reason } : {}),
    ...(s.message ? { message: s.message } : {}),
    ...(s.exitCode !== undefined ? { exitCode: s.exitCode } : {}),
  };
}

export interface Rollup {
  phase: RunPhase;
  /** The first failed task, for the Failed condition. */
  failed?: JobTaskStatus;
  /** Tasks not yet running, for the Ready condition's message. */
  waiting: string[];
}

export function rollup(templates: readonly TaskTemplate[], statuses: readonly JobTaskStatus[]): Rollup {
  const waiting = statuses.filter((s) => s.phase !== "Running" && s.phase !== "Succeeded").map((s) => s.name);
  const failed = statuses.find((s) => s.phase === "Failed");
  if (failed) return { phase: "Failed", failed, waiting };
  const finishing = templates.filter(finishes).map((t) => t.name);
  const phaseOf = new Map(statuses.map((s) => [s.name, s.phase]));
  if (finishing.length > 0 && finishing.every((name) => phaseOf.get(name) === "Succeeded")) {
    return { phase: "Succeeded", waiting };
  }
  if (templates.every((t) => phaseOf.get(t.name) === "Running" || phaseOf.get(t.name) === "Succeeded")) {
    return { phase: "Running", waiting };
  }
  return { phase: "Pending", waiting };
}

/** "task learner failed: OOMKilled (exit code 137): container trainer was killed" */
export function failureMessage(failed: JobTaskStatus): string {
  let text = `task ${failed.name} failed`;
  const detail: string[] = [];
  if (failed.reason) detail.push(failed.reason);
  if (failed.exitCode !== undefined) detail.push(`(exit code ${failed.exitCode})`);
  if (detail.length > 0) text += `: ${detail.join(" ")}`;
  if (failed.message) text += `: ${failed.message}`;
  return text;
}
