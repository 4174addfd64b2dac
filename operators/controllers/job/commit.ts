// Writing what one reconcile decided: the Job's finalizer, the new Tasks (a gang appears whole)
// and the status, in one transaction (one disk sync). A name that already exists (a Task this
// controller created before it was killed, or the previous run's still being cleaned up) fails
// the batch; then each Task is created on its own and existing ones are adopted.

import type { Job, JobStatus, Task, TaskTemplate } from "../../api/index.ts";
import { JOB_STOP_FINALIZER } from "../../api/index.ts";
import { type BatchOp, deepEqual, isAlreadyExists, type Store } from "../../lib/store/index.ts";
import type { TaskToCreate } from "./place-tasks.ts";
import type { JobPlans } from "./plans.ts";
import { ownedBy, runOf } from "./task-object.ts";

export interface CommitInput {
  store: Store;
  plans: JobPlans;
  job: Job;
  status: JobStatus;
  creates: readonly TaskToCreate[];
}

/** Resolves with how soon to look again, when a Task's name is still taken by the previous run. */
export async function commit(input: CommitInput): Promise<{ requeueAfter?: number }> {
  const { store, plans, status: s, creates } = input;
  let job = input.job;
  const needsFinalizer = !(job.metadata.finalizers ?? []).includes(JOB_STOP_FINALIZER);
  const withFinalizer: Job = {
    ...job,
    metadata: { ...job.metadata, finalizers: [...(job.metadata.finalizers ?? []), JOB_STOP_FINALIZER] },
  };
  if (job.metadata.generation !== undefined) s.observedGeneration = job.metadata.generation;
  const statusChanged = !deepEqual(s, job.status ?? {});
  if (!needsFinalizer && creates.length === 0) {
    if (statusChanged) await store.updateStatus({ ...job, status: s });
    return {};
  }
  const { resourceVersion: _unconditional, ...metadata } = job.metadata;
  const ops: BatchOp[] = [
    ...(needsFinalizer ? [{ op: "update" as const, object: withFinalizer }] : []),
    ...creates.map((c) => ({ op: "create" as const, object: c.object })),
    // Only this controller writes Job status; the finalizer update above carries the
    // resourceVersion check for the whole batch.
    ...(statusChanged ? [{ op: "updateStatus" as const, object: { ...job, metadata, status: s } }] : []),
  ];
  try {
    await store.applyBatch(ops);
    return {};
  } catch (error) {
    if (!isAlreadyExists(error)) {
      for (const c of creates) plans.backToPlan(c.template, c.object);
      throw error;
    }
  }
  if (needsFinalizer) job = await store.update(withFinalizer);
  let requeueAfter: number | undefined;
  for (const c of creates) {
    if (!(await createTask(input, job, c.object, c.template, s.run ?? 1))) requeueAfter = 1000;
  }
  await writeStatus(store, job, s);
  return requeueAfter === undefined ? {} : { requeueAfter };
}

/**
 * One Task on its own, for when the batch met an existing name. False when the name is the
 * previous run's Task, still being cleaned up.
 */
async function createTask(
  { store, plans }: CommitInput,
  job: Job,
  object: Task,
  template: TaskTemplate,
  run: number,
): Promise<boolean> {
  try {
    await store.create(object);
    return true;
  } catch (error) {
    if (!isAlreadyExists(error)) {
      plans.backToPlan(template, object);
      throw error;
    }
    const existing = await store.get<Task>("Task", object.metadata.namespace, object.metadata.name);
    if (
      existing &&
      ownedBy(existing, job) &&
      runOf(existing) === run &&
      !existing.metadata.deletionTimestamp
    ) {
      return true;
    }
    plans.backToPlan(template, object);
    return false;
  }
}

/** Writes the status alone, when it changed. */
export async function writeStatus(store: Store, job: Job, status: JobStatus): Promise<Job> {
  if (job.metadata.generation !== undefined) status.observedGeneration = job.metadata.generation;
  if (deepEqual(status, job.status ?? {})) return job;
  return store.updateStatus({ ...job, status });
}
