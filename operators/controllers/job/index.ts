// The Job controller: Tasks from a Job's templates, placed all-or-nothing across clusters, and
// the phase machine of seed 000 §6-8 (Pending → Running → Succeeded | Failed; Stopping → Stopped;
// fresh runs on un-stop, a changed rlinf.io/run annotation or changed task templates; history of
// earlier runs).
//
//   const jobs = createJobController({ offlineGracePeriod: 5 * 60_000 });
//   manager.add(jobs);                 // watches Jobs, their Tasks, Nodes and Clusters
//   jobs.snapshot                      // the pool picture placement reads (for benchmarks, status pages)
//
// Contract with the agents' glue: Tasks live in agent-<cluster>, named <job>-<task>, labelled
// rlinf.io/job, rlinf.io/task, rlark.io/run, owned by the Job, with finalizer
// rlark.io/agent-cleanup; the glue writes Task status (phase, replicas, exitCode, ...) and
// removes the finalizer once the agent has cleaned up. Jobs carry finalizer rlark.io/job-stop so
// a Job deleted from git is stopped before it goes.

export { createJobController, type JobController } from "./controller.ts";
export { failureMessage, finishes, rollup } from "./rollup.ts";
export { taskObject } from "./task-object.ts";
