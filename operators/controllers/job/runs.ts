// Run bookkeeping (pure, on the status draft): which run a Job is on, whether it wants a fresh
// one, and starting it. A run answers one rlinf.io/run annotation and one spec hash; a change
// of either, or a start after a stop, makes the next run, and the finished one goes to history.

import type { Job, JobRunRecord, JobStatus, Task } from "../../api/index.ts";
import { RUN_ANNOTATION } from "../../api/index.ts";
import { getCondition, timestamp } from "./conditions.ts";
import { isTerminal } from "./rollup.ts";
import { specHash } from "./spec-hash.ts";
import type { StatusDraft } from "./status-draft.ts";
import { runOf, taskObjectName } from "./task-object.ts";

const HISTORY_LIMIT = 10;

function runAnnotation(job: Job): string {
  return job.metadata.annotations?.[RUN_ANNOTATION] ?? "";
}

/**
 * Adopts what a previous process left: Tasks of a run whose status was never written. A run
 * started before the hub recorded spec hashes answers the spec it finds.
 */
export function adoptRun(draft: StatusDraft, job: Job, tasks: readonly Task[]): void {
  const s = draft.status;
  if (!s.run) {
    const runs = tasks.map(runOf).filter((n) => n > 0);
    if (runs.length > 0) {
      s.run = Math.max(...runs);
      s.phase ??= "Pending";
      s.runAnnotation = runAnnotation(job);
      s.specHash = specHash(job);
      s.startTime ??= timestamp(draft.now);
    }
  }
  if (s.run && s.specHash === undefined) s.specHash = specHash(job);
}

export function restartWanted(status: JobStatus, job: Job): boolean {
  if (!status.run) return true;
  if (status.phase === "Stopped" || status.phase === "Stopping") return true;
  return changes(status, job).length > 0;
}

/** What changed since the current run started, in words. */
function changes(status: JobStatus, job: Job): string[] {
  const found: string[] = [];
  if (status.runAnnotation !== undefined && status.runAnnotation !== runAnnotation(job)) {
    found.push(`the ${RUN_ANNOTATION} annotation changed to "${runAnnotation(job)}"`);
  }
  if (status.specHash !== undefined && status.specHash !== specHash(job)) found.push("spec changed");
  return found;
}

/** Why the next run starts: what changed, or else a start after a stop. */
export function restartReason(status: JobStatus, job: Job): string {
  return changes(status, job).join("; ") || "started again after a stop";
}

/** Records the current run in history and starts the next, every task Pending and unplaced. */
export function startRun(draft: StatusDraft, job: Job): void {
  const s = draft.status;
  const reason = s.run ? restartReason(s, job) : undefined;
  if (s.run) {
    const record: JobRunRecord = {
      run: s.run,
      phase: finalPhase(s),
      ...(s.startTime ? { startTime: s.startTime } : {}),
      ...(s.completionTime ? { completionTime: s.completionTime } : {}),
      ...(reason ? { reason } : {}),
      tasks: s.tasks ?? [],
    };
    s.history = [...(s.history ?? []), record].slice(-HISTORY_LIMIT);
  }
  s.run = (s.run ?? 0) + 1;
  s.runAnnotation = runAnnotation(job);
  s.specHash = specHash(job);
  s.phase = "Pending";
  s.startTime = timestamp(draft.now);
  delete s.completionTime;
  s.conditions = [];
  s.tasks = job.spec.tasks.map((t) => ({
    name: t.name,
    taskName: taskObjectName(job.metadata.name, t.name),
    phase: "Pending",
  }));
  draft.event("Normal", "RunStarted", reason ? `run ${s.run} started: ${reason}` : `run ${s.run} started`);
}

/** How the current run ended, for history: its outcome if it had one, else Stopped. */
function finalPhase(status: JobStatus): JobRunRecord["phase"] {
  if (isTerminal(status.phase)) return status.phase;
  if (getCondition(status.conditions, "Failed")?.status === "True") return "Failed";
  if (getCondition(status.conditions, "Complete")?.status === "True") return "Succeeded";
  return "Stopped";
}
