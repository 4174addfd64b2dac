// The Job controller (seed 000 §6-8): one Task per template, placed all-or-nothing across
// clusters, and the phase machine
//
//   (new) → Pending → Running → Succeeded | Failed
//   any   → Stopping (Tasks deleted, waiting for the agents' cleanup) → Stopped
//   Stopped + stopped cleared, a changed rlinf.io/run annotation, or changed task templates
//     (spec.tasks, domain, sshPublicKey: status.specHash) → Stopping → a fresh run
//
// Its steps, one module each: the watch table (watch-table.ts), one reconcile's reads and
// writes (reconcile.ts, commit.ts), run bookkeeping (runs.ts), the run's phase (run-phase.ts),
// Tasks on Offline clusters (offline-clusters.ts), placement of missing tasks (place-tasks.ts)
// and the room it holds (plans.ts).

import type { Clock } from "../../lib/clock.ts";
import type {
  Controller,
  ReconcileContext,
  ReconcileRequest,
  ReconcileResult,
} from "../../lib/controller/index.ts";
import { PlacementSnapshot } from "../placement/index.ts";
import { QuotaLedger } from "../quota/index.ts";
import { OfflineClusters } from "./offline-clusters.ts";
import { reconcileJob } from "./reconcile.ts";
import { JobWatchTable } from "./watch-table.ts";

export interface JobControllerOptions {
  /** Default: the manager's clock. */
  clock?: Clock;
  /** How long a cluster may be Offline before its not-yet-running Tasks are placed elsewhere (ms). Default 5 min. */
  offlineGracePeriod?: number;
  /** How often an unplaceable Job is tried again besides on Node and Cluster changes (ms). Default 60 s. */
  unschedulableRetry?: number;
  /** The pool picture; default a new one. Share it to place other work against the same reservations. */
  snapshot?: PlacementSnapshot;
  /** The quota account; default a new one. Share it to read admission from elsewhere. */
  quota?: QuotaLedger;
  /** Controller name (metrics label). Default "job". */
  name?: string;
  /** Parallel reconciles (placement stays exact: it reserves before it awaits). Default 16. */
  workers?: number;
}

export interface JobController extends Controller {
  readonly snapshot: PlacementSnapshot;
  readonly quota: QuotaLedger;
}

export function createJobController(options: JobControllerOptions = {}): JobController {
  const snapshot = options.snapshot ?? new PlacementSnapshot();
  const retry = options.unschedulableRetry ?? 60_000;
  const quota = options.quota ?? new QuotaLedger();
  const table = new JobWatchTable(snapshot, quota);
  const offline = new OfflineClusters(snapshot, options.offlineGracePeriod ?? 5 * 60_000);

  return {
    name: options.name ?? "job",
    kind: "Job",
    snapshot,
    quota,
    // Reconciles wait mostly on the store's disk sync, which concurrent writes share.
    workers: options.workers ?? 16,
    watches: table.watches,
    async reconcile(
      request: ReconcileRequest,
      context: ReconcileContext,
    ): Promise<ReconcileResult | undefined> {
      await Promise.all([snapshot.load(context.store), quota.load(context.store)]);
      const clock = options.clock ?? context.clock;
      const outcome = await reconcileJob(
        {
          store: context.store,
          now: clock.now(),
          snapshot,
          offline,
          quota,
          enqueue: (job) => context.enqueue(job),
        },
        request.name,
      );
      // Quota given back or taken wakes, per team, the waiting Jobs that fit now (ledger.wakes).
      for (const job of quota.wakes()) context.enqueue(job);
      table.setWaiting(request.name, outcome.unschedulable === true && outcome.waitingForQuota !== true);
      if (outcome.unschedulable) {
        return { requeueAfter: Math.min(retry, outcome.requeueAfter ?? retry) };
      }
      return outcome.requeueAfter !== undefined ? { requeueAfter: outcome.requeueAfter } : undefined;
    },
  };
}
