// Quotas over the pool (docs/teams.md): Teams, admission of a Job's whole request before
// placement, borrowing within a cohort, fair sharing by weight and preemption of borrowers.
//
//   const ledger = new QuotaLedger();        // shared by the Job controller's reconciles
//   await ledger.load(store);
//   const team = ledger.teamOf(job);         // undefined: no quota applies
//   const decision = ledger.admit(job, team, now);
//   decision.admit ? place(job) : condition(QuotaReserved=False, decision.reason, decision.message);
//
// admission.ts is the pure core; ledger.ts books its decisions.

export {
  type AdmittedJob,
  cohortOf,
  type Decision,
  decide,
  dominantShare,
  freeFor,
  type QuotaState,
  usage,
  type WaitingJob,
} from "./admission.ts";
export { QuotaLedger } from "./ledger.ts";
export {
  exactQuantity,
  formatQuota,
  formatQuotaAmount,
  jobRequest,
  parseQuotaKey,
  quotaKey,
  type TeamQuota,
  teamNameOf,
  teamQuota,
} from "./team-quota.ts";
