// The Job's admission to its team's quota, before placement (operators/controllers/quota/):
// the QuotaReserved condition says whether it holds quota, and if not, which resource it lacks
// and by how much; Evicted says it is being preempted. Decides on the status draft.

import type { Job } from "../../api/index.ts";
import type { QuotaLedger } from "../quota/index.ts";
import { exactQuantity } from "../quota/index.ts";
import { getCondition } from "./conditions.ts";
import type { StatusDraft } from "./status-draft.ts";

export interface Admission {
  /** The Job may be placed. */
  admitted: boolean;
  /** Jobs to reconcile now: the ones this decision preempts. */
  wake: string[];
}

/** Admits the Job if it fits (or already holds quota, or no quota applies to it). */
export function admitJob(draft: StatusDraft, job: Job, ledger: QuotaLedger, running: boolean): Admission {
  const name = job.metadata.name;
  const team = ledger.teamOf(job);
  if (!team) {
    if (draft.status.conditions)
      draft.status.conditions = draft.status.conditions.filter((c) => c.type !== "QuotaReserved");
    return { admitted: true, wake: [] };
  }
  if (ledger.isAdmitted(name)) {
    holds(draft, ledger, name);
    return { admitted: true, wake: [] };
  }
  if (running) {
    // Tasks of this run exist (placed before the hub counted quota, or before a restart lost
    // the condition): the Job holds what it holds.
    ledger.adopt(job, draft.now);
    draft.condition("QuotaReserved", "True", "QuotaReserved", `admitted to team ${team.name}`);
    holds(draft, ledger, name);
    return { admitted: true, wake: [] };
  }
  const decision = ledger.admit(job, team, draft.now);
  const previous = getCondition(draft.status.conditions, "QuotaReserved");
  if (decision.admit) {
    draft.condition("QuotaReserved", "True", "QuotaReserved", decision.message);
    draft.event("Normal", "QuotaReserved", decision.message);
    holds(draft, ledger, name);
    return { admitted: true, wake: [] };
  }
  draft.condition("QuotaReserved", "False", decision.reason, decision.message);
  if (previous?.status !== "False" || previous.message !== decision.message) {
    draft.event(decision.reason === "Preempting" ? "Normal" : "Warning", decision.reason, decision.message);
  }
  return { admitted: false, wake: decision.victims };
}

/** status.quota: what the Job holds, for the dashboard and the API. */
function holds(draft: StatusDraft, ledger: QuotaLedger, job: string): void {
  const admitted = ledger.state().admitted.get(job);
  if (!admitted) return;
  const request: Record<string, string> = {};
  for (const key of Object.keys(admitted.request).sort())
    request[key] = exactQuantity(admitted.request[key] as number);
  draft.status.quota = { team: admitted.team, request };
}

/** The Job is preempted: Evicted=True until its Tasks are gone. */
export function markEvicted(draft: StatusDraft, team: string): void {
  const message = `team ${team}'s borrowed quota is taken back by a team of its cohort; the Job is stopped and queued again`;
  const previous = getCondition(draft.status.conditions, "Evicted");
  draft.condition("Evicted", "True", "Preempted", message);
  if (previous?.status !== "True") draft.event("Warning", "Evicted", message);
}
