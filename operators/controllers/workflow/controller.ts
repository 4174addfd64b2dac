// The Workflow controller's I/O: reads a Workflow and its Jobs, asks decide() what to do,
// creates / stops / deletes Jobs, writes status. Level-triggered: every pass starts from the store.

import type { Job, Workflow, WorkflowStatus } from "../../api/index.ts";
import {
  WORKFLOW_FINALIZER,
  WORKFLOW_JOB_LABEL,
  WORKFLOW_LABEL,
  WORKFLOW_RUN_LABEL,
} from "../../api/index.ts";
import type { Controller, ReconcileContext, ReconcileRequest } from "../../lib/controller/index.ts";
import { watchOwned } from "../../lib/controller/index.ts";
import { isAlreadyExists, isNotFound, modify, type Store } from "../../lib/store/index.ts";
import { decide, type NodeObservation } from "./dag.ts";
import { runStatus, stoppedStatus } from "./status.ts";

export interface WorkflowControllerOptions {
  /** Controller name (metrics label). Default "workflow". */
  name?: string;
  workers?: number;
  resyncPeriod?: number;
}

export function jobNameFor(workflow: string, node: string): string {
  return `${workflow}-${node}`;
}

/** Jobs this Workflow controls (label and controller ownerReference both point at it). */
async function ownedJobs(store: Store, workflow: Workflow): Promise<Job[]> {
  const { items } = await store.list<Job>("Job", {
    labelSelector: { matchLabels: { [WORKFLOW_LABEL]: workflow.metadata.name } },
  });
  return items.filter((job) =>
    (job.metadata.ownerReferences ?? []).some(
      (r) => r.kind === "Workflow" && r.controller && r.uid === workflow.metadata.uid,
    ),
  );
}

async function deleteJobs(store: Store, jobs: readonly Job[]): Promise<void> {
  for (const job of jobs) {
    if (job.metadata.deletionTimestamp) continue;
    try {
      await store.delete("Job", "", job.metadata.name, {
        preconditions: job.metadata.uid ? { uid: job.metadata.uid } : {},
      });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
}

async function writeStatus(store: Store, workflow: Workflow, status: WorkflowStatus): Promise<Workflow> {
  return store.updateStatus({ ...workflow, status });
}

async function reconcileWorkflow(request: ReconcileRequest, context: ReconcileContext): Promise<void> {
  const { store, clock, logger } = context;
  let workflow = await store.get<Workflow>("Workflow", "", request.name);
  // Gone: the store collects its Jobs by ownerReference.
  if (!workflow) return;
  const name = workflow.metadata.name;
  const owned = await ownedJobs(store, workflow);

  if (workflow.metadata.deletionTimestamp) {
    await deleteJobs(store, owned);
    if (owned.length > 0) return; // each Job's deletion queues us again
    await modify<Workflow>(store, "Workflow", "", name, (w) => {
      w.metadata.finalizers = (w.metadata.finalizers ?? []).filter((f) => f !== WORKFLOW_FINALIZER);
    });
    logger.info("workflow deleted with its jobs", { workflow: name });
    return;
  }
  if (!(workflow.metadata.finalizers ?? []).includes(WORKFLOW_FINALIZER)) {
    workflow = await store.update<Workflow>({
      ...workflow,
      metadata: {
        ...workflow.metadata,
        finalizers: [...(workflow.metadata.finalizers ?? []), WORKFLOW_FINALIZER],
      },
    });
  }

  const previous = workflow.status ?? {};
  const now = new Date(clock.now()).toISOString();
  const byNode = (jobs: readonly Job[]) =>
    new Map(jobs.map((j) => [j.metadata.labels?.[WORKFLOW_JOB_LABEL] ?? j.metadata.name, j]));

  if (workflow.spec.stopped) {
    // Seed §7: stopping deletes every Job of the run, completed ones included.
    await deleteJobs(store, owned);
    const status = stoppedStatus({
      spec: workflow.spec,
      generation: workflow.metadata.generation,
      jobs: byNode(owned),
      previous,
      now,
    });
    if (status.phase === "Stopped" && previous.phase !== "Stopped")
      logger.info("workflow stopped", { workflow: name, run: status.run });
    await writeStatus(store, workflow, status);
    return;
  }

  let run = previous.run ?? 0;
  if (run === 0 || previous.phase === "Stopped" || previous.phase === "Stopping") {
    // A fresh run from the roots. Persist the number before any Job carries it, so a crash in
    // between cannot leave Jobs of a run the status does not know.
    run += 1;
    workflow = await writeStatus(store, workflow, {
      phase: "Pending",
      run,
      startTime: now,
      nodes: workflow.spec.jobs.map((j) => ({ name: j.name, phase: "Pending" })),
      ...(workflow.metadata.generation !== undefined
        ? { observedGeneration: workflow.metadata.generation }
        : {}),
    });
    logger.info("workflow run started", { workflow: name, run });
  }

  const runLabel = String(run);
  const nodes = new Map(workflow.spec.jobs.map((j) => [j.name, j]));
  const current: Job[] = [];
  const stale: Job[] = [];
  for (const job of owned) {
    const node = job.metadata.labels?.[WORKFLOW_JOB_LABEL];
    const fits =
      job.metadata.labels?.[WORKFLOW_RUN_LABEL] === runLabel &&
      node !== undefined &&
      nodes.has(node) &&
      job.metadata.name === jobNameFor(name, node);
    (fits ? current : stale).push(job);
  }
  // Jobs of an earlier run, or of nodes no longer in the spec.
  await deleteJobs(store, stale);
  // A run starts only once the previous run's Jobs are gone (their workloads cleaned up), so
  // two runs never overlap; a Job of a node dropped from the spec holds its own name only.
  const previousRunLeft = stale.some((j) => j.metadata.labels?.[WORKFLOW_RUN_LABEL] !== runLabel);
  const taken = new Set(stale.map((j) => j.metadata.name));

  const jobs = byNode(current);
  const observed = new Map<string, NodeObservation>();
  for (const [node, job] of jobs)
    observed.set(node, { phase: job.status?.phase, stopRequested: job.spec.stopped === true });
  const decision = decide({
    nodes: workflow.spec.jobs,
    observed,
    failurePolicy: workflow.spec.failurePolicy ?? "StopAll",
  });

  const messages = new Map<string, string>();
  for (const node of decision.start) {
    const jobName = jobNameFor(name, node);
    const template = nodes.get(node)?.template;
    // Whatever still holds the name is being deleted; its deletion queues us again.
    if (!template || previousRunLeft || taken.has(jobName)) continue;
    const job: Job = {
      apiVersion: "rlinf.io/v1alpha1",
      kind: "Job",
      metadata: {
        name: jobName,
        labels: { [WORKFLOW_LABEL]: name, [WORKFLOW_JOB_LABEL]: node, [WORKFLOW_RUN_LABEL]: runLabel },
        ownerReferences: [
          {
            apiVersion: workflow.apiVersion,
            kind: "Workflow",
            name,
            uid: workflow.metadata.uid ?? "",
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: structuredClone(template),
    };
    try {
      jobs.set(node, await store.create(job));
      logger.info("workflow job created", { workflow: name, run, job: jobName });
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
      // Ours would have been listed above: this one came from git or another Workflow.
      messages.set(
        node,
        `cannot create Job ${jobName}: a Job of that name exists that this Workflow does not own`,
      );
    }
  }
  for (const node of decision.stop) {
    const job = jobs.get(node);
    if (!job) continue;
    await modify<Job>(store, "Job", "", job.metadata.name, (j) => {
      j.spec.stopped = true;
    });
    logger.info("workflow job stopped after a failure", { workflow: name, run, job: job.metadata.name });
  }

  // What was just created counts as Pending in the status of this pass.
  const reported =
    decision.start.length > 0
      ? decide({
          nodes: workflow.spec.jobs,
          observed: new Map([
            ...observed,
            ...decision.start.filter((n) => jobs.has(n) && !observed.has(n)).map((n) => [n, {}] as const),
          ]),
          failurePolicy: workflow.spec.failurePolicy ?? "StopAll",
        })
      : decision;
  const status = runStatus({
    spec: workflow.spec,
    generation: workflow.metadata.generation,
    run,
    decision: reported,
    jobs,
    previous: workflow.status ?? {},
    now,
    messages,
  });
  if (status.phase !== previous.phase && (status.phase === "Succeeded" || status.phase === "Failed"))
    logger.info("workflow run finished", { workflow: name, run, phase: status.phase });
  await writeStatus(store, workflow, status);
}

/** The Workflow controller: Jobs in DAG order, failure policies, stop and resume (seed 000 §7). */
export function createWorkflowController(options: WorkflowControllerOptions = {}): Controller {
  return {
    name: options.name ?? "workflow",
    kind: "Workflow",
    watches: [watchOwned("Job", "Workflow", { controllerOnly: true })],
    reconcile: reconcileWorkflow,
    ...(options.workers !== undefined ? { workers: options.workers } : {}),
    ...(options.resyncPeriod !== undefined ? { resyncPeriod: options.resyncPeriod } : {}),
  };
}
