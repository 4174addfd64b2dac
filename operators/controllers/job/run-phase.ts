// Where the current run stands (pure, on the status draft): the phase, the task lines, and the
// Ready / Complete / Failed conditions and events that go with each step of
//
//   Pending → Running → Succeeded | Failed;  any → Stopping → Stopped

import type { Job, JobTaskStatus, Task, TaskTemplate } from "../../api/index.ts";
import { timestamp } from "./conditions.ts";
import { failureMessage, isTerminal, type RunPhase, rollup, taskStatus } from "./rollup.ts";
import type { StatusDraft } from "./status-draft.ts";

/** Tasks are being deleted (a stop, a fresh run, the Job's deletion): the run waits for cleanup. */
export function enterStopping(draft: StatusDraft, reason: string, message: string): void {
  const s = draft.status;
  for (const t of s.tasks ?? []) if (!isTerminal(t.phase) && t.phase !== "Stopped") t.phase = "Stopping";
  draft.condition("Ready", "False", reason, message);
  if (s.phase !== "Stopping") {
    s.phase = "Stopping";
    draft.event("Normal", reason, message);
  }
}

/** A stopped Job's Tasks are all gone. */
export function markStopped(draft: StatusDraft): void {
  const s = draft.status;
  if (s.phase === "Stopped") return;
  s.phase = "Stopped";
  for (const t of s.tasks ?? []) if (!isTerminal(t.phase)) t.phase = "Stopped";
  s.completionTime ??= timestamp(draft.now);
  draft.condition("Ready", "False", "Stopped", "the Job is stopped; clear spec.stopped to start a fresh run");
  draft.event("Normal", "Stopped", "every Task is gone; the Job is Stopped");
}

/** The task lines from the run's Tasks (or plans), and the run's phase from them. */
export function rollUpRun(
  draft: StatusDraft,
  job: Job,
  templates: readonly TaskTemplate[],
  current: ReadonlyMap<string, Task>,
): void {
  const s = draft.status;
  const previous = new Map((s.tasks ?? []).map((t) => [t.name, t]));
  const statuses: JobTaskStatus[] = templates.map((template) => {
    const task = current.get(template.name);
    const entry = previous.get(template.name);
    const plan = entry?.phase === "Scheduled" || entry?.phase === "Pending" ? entry.cluster : undefined;
    return taskStatus(job.metadata.name, template, task, plan);
  });
  if (isTerminal(s.phase)) {
    // A finished run keeps its outcome; only the task lines follow their Tasks' last reports.
    s.tasks = statuses.map((line) => (current.has(line.name) ? line : (previous.get(line.name) ?? line)));
    return;
  }
  s.tasks = statuses;
  const result = rollup(templates, statuses);
  const was = s.phase;
  s.phase = result.phase;
  rollupConditions(draft, result.phase, result.waiting, result.failed);
  if (was !== result.phase) phaseEvent(draft, result.phase, result.failed);
}

function rollupConditions(
  draft: StatusDraft,
  phase: RunPhase,
  waiting: string[],
  failed: JobTaskStatus | undefined,
): void {
  const s = draft.status;
  switch (phase) {
    case "Running":
      draft.condition("Ready", "True", "TasksRunning", "every task is running");
      break;
    case "Pending":
      draft.condition("Ready", "False", "TasksNotRunning", `waiting for ${waiting.join(", ")}`);
      break;
    case "Succeeded":
      s.completionTime ??= timestamp(draft.now);
      draft.condition("Ready", "False", "Completed", "every finishing task succeeded");
      draft.condition("Complete", "True", "TasksSucceeded", "every finishing task succeeded");
      break;
    case "Failed": {
      s.completionTime ??= timestamp(draft.now);
      const message = failed ? failureMessage(failed) : "a task failed";
      draft.condition("Ready", "False", "TaskFailed", message);
      draft.condition("Failed", "True", "TaskFailed", message);
      break;
    }
  }
}

function phaseEvent(draft: StatusDraft, phase: RunPhase, failed: JobTaskStatus | undefined): void {
  switch (phase) {
    case "Running":
      draft.event("Normal", "Running", "every task is running");
      break;
    case "Succeeded":
      draft.event("Normal", "Succeeded", "every finishing task succeeded");
      break;
    case "Failed":
      draft.event("Warning", "Failed", failed ? failureMessage(failed) : "a task failed");
      break;
    case "Pending":
      break;
  }
}
