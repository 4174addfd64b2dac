// The controller runtime: level-triggered reconcilers over a de-duplicating, rate-limited
// work queue (pepr's per-key serialisation, client-go's backoff), started by a Manager.
//
//   const jobs: Controller = {
//     name: "job",
//     kind: "Job",
//     watches: [watchOwned("Task", "Job")],             // a Task change queues its owner Job
//     async reconcile({ namespace, name }, { store }) {
//       const job = await store.get("Job", namespace, name);
//       if (!job) return;                                 // gone: clean up
//       ...
//       return { requeueAfter: 30_000 };                  // optional
//     },
//   };
//   const manager = new Manager({ store, registry, logger });
//   manager.add(jobs);
//   await manager.start();
//   http: res.end(await manager.metricsText())           // content type: contentType from ../metrics
//   await manager.stop();                                 // drains queued keys
//
// Guarantees: a key queued many times before a worker takes it is reconciled once; never two
// reconciles of one key at once (re-queued while running → once more after); a throw retries
// the key after 5 ms, 10 ms, 20 ms ... up to 1000 s, reset by the next success; every object of
// the primary kind is queued again every resyncPeriod (default 10 min).
//
// An applier that brings one thing to a desired state (a Secret, the workloads of a desired set,
// a poll) uses ApplyLoop instead: set(desired) with the latest state wins, one run at a time,
// failures back off on the same rate limiter with jitter (loop/apply-loop.ts).

export { ApplyLoop, type ApplyLoopOptions, type RunResult } from "./loop/index.ts";
export { Manager, type ManagerOptions } from "./manager.ts";
export { type OwnerOptions, ownerKeys, watchOwned } from "./owners.ts";
export { ExponentialFailureRateLimiter, type RateLimiter } from "./rate-limiter.ts";
export { type ControllerMetrics, ControllerRunner, type RunnerOptions } from "./runner.ts";
export type {
  Controller,
  MapToKeys,
  ReconcileContext,
  ReconcileOutcome,
  ReconcileRequest,
  ReconcileResult,
  WatchSpec,
} from "./types.ts";
export { WorkQueue, type WorkQueueOptions } from "./work-queue.ts";
