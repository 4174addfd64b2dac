// Workflow status from a DAG decision and the run's Jobs. Pure: timestamps already recorded are
// kept, so writing the same observation twice writes nothing.

import type { Condition, Job, WorkflowNodeStatus, WorkflowSpec, WorkflowStatus } from "../../api/index.ts";
import type { DagDecision } from "./dag.ts";

export interface RunStatusInput {
  spec: WorkflowSpec;
  generation: number | undefined;
  run: number;
  decision: DagDecision;
  /** The run's Jobs by node name. */
  jobs: ReadonlyMap<string, Job>;
  previous: WorkflowStatus;
  now: string;
  /** Per-node detail that wins over the computed message (e.g. a name held by a foreign Job). */
  messages?: ReadonlyMap<string, string>;
}

const terminal = new Set(["Succeeded", "Failed", "Stopped", "Skipped"]);

export function runStatus(input: RunStatusInput): WorkflowStatus {
  const { spec, decision, jobs, previous, now } = input;
  const before = new Map((previous.run === input.run ? (previous.nodes ?? []) : []).map((n) => [n.name, n]));
  const failedBy = decision.broken.join(", ");
  const nodes = spec.jobs.map((node): WorkflowNodeStatus => {
    const phase = decision.phases.get(node.name) ?? "Pending";
    const job = jobs.get(node.name);
    const prev = before.get(node.name);
    const out: WorkflowNodeStatus = { name: node.name, phase };
    if (job) {
      out.job = job.metadata.name;
      const started = job.status?.startTime ?? prev?.startTime ?? job.metadata.creationTimestamp;
      if (started) out.startTime = started;
    }
    if (terminal.has(phase) && phase !== "Skipped") {
      out.completionTime = job?.status?.completionTime ?? prev?.completionTime ?? now;
    }
    if (phase === "Skipped") {
      out.message =
        (spec.failurePolicy ?? "StopAll") === "StopAll"
          ? `not started: ${failedBy} did not succeed (failurePolicy StopAll)`
          : `not started: depends on ${failedBy}, which did not succeed`;
    } else if (!job && phase === "Pending") {
      const waiting = (node.dependsOn ?? []).filter((d) => decision.phases.get(d) !== "Succeeded");
      if (waiting.length > 0) out.message = `waiting for ${waiting.join(", ")}`;
    }
    const override = input.messages?.get(node.name);
    if (override) out.message = override;
    return out;
  });
  const status: WorkflowStatus = {
    phase: decision.phase,
    run: input.run,
    startTime: (previous.run === input.run ? previous.startTime : undefined) ?? now,
    nodes,
  };
  if (input.generation !== undefined) status.observedGeneration = input.generation;
  if (decision.phase === "Succeeded" || decision.phase === "Failed") {
    status.completionTime = (previous.run === input.run ? previous.completionTime : undefined) ?? now;
  }
  const succeeded: Omit<Condition, "lastTransitionTime"> =
    decision.phase === "Succeeded"
      ? { type: "Succeeded", status: "True", reason: "AllJobsSucceeded", message: "every Job succeeded" }
      : decision.phase === "Failed"
        ? { type: "Succeeded", status: "False", reason: "JobFailed", message: `${failedBy} did not succeed` }
        : decision.broken.length > 0
          ? {
              type: "Succeeded",
              status: "Unknown",
              reason: "JobFailed",
              message: `${failedBy} did not succeed; ${(spec.failurePolicy ?? "StopAll") === "StopAll" ? "stopping the rest" : "running what does not depend on it"}`,
            }
          : {
              type: "Succeeded",
              status: "Unknown",
              reason: "Running",
              message: `run ${input.run} in progress`,
            };
  status.conditions = [condition(succeeded, previous.conditions, now, input.generation)];
  return status;
}

export interface StoppedStatusInput {
  spec: WorkflowSpec;
  generation: number | undefined;
  /** Jobs still present (being deleted), by node name. */
  jobs: ReadonlyMap<string, Job>;
  previous: WorkflowStatus;
  now: string;
}

export function stoppedStatus(input: StoppedStatusInput): WorkflowStatus {
  const { previous, now, jobs } = input;
  const stopping = jobs.size > 0;
  const before = new Map((previous.nodes ?? []).map((n) => [n.name, n]));
  const nodes = input.spec.jobs.map((node): WorkflowNodeStatus => {
    const job = jobs.get(node.name);
    const prev = before.get(node.name);
    const out: WorkflowNodeStatus = { name: node.name, phase: job ? "Stopping" : "Stopped" };
    if (job) out.job = job.metadata.name;
    if (prev?.startTime) out.startTime = prev.startTime;
    if (!job) out.completionTime = prev?.completionTime ?? now;
    return out;
  });
  const status: WorkflowStatus = {
    phase: stopping ? "Stopping" : "Stopped",
    run: previous.run ?? 0,
    nodes,
  };
  if (previous.startTime) status.startTime = previous.startTime;
  if (!stopping)
    status.completionTime =
      previous.phase === "Stopped" && previous.completionTime ? previous.completionTime : now;
  if (input.generation !== undefined) status.observedGeneration = input.generation;
  status.conditions = [
    condition(
      {
        type: "Succeeded",
        status: "False",
        reason: "Stopped",
        message: stopping
          ? `spec.stopped: deleting ${jobs.size} Job(s) of run ${status.run}`
          : `spec.stopped: every Job of run ${status.run} is deleted; clear it to start run ${(status.run ?? 0) + 1}`,
      },
      previous.conditions,
      now,
      input.generation,
    ),
  ];
  return status;
}

function condition(
  next: Omit<Condition, "lastTransitionTime">,
  previous: readonly Condition[] | undefined,
  now: string,
  generation: number | undefined,
): Condition {
  const prev = previous?.find((c) => c.type === next.type);
  const out: Condition = {
    ...next,
    lastTransitionTime: prev && prev.status === next.status ? (prev.lastTransitionTime ?? now) : now,
  };
  if (generation !== undefined) out.observedGeneration = generation;
  return out;
}
