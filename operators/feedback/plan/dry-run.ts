// Server-side dry-run of each placed Kubernetes workload against the cluster it would land on,
// so the real API server's admission and validation speak in the review. The runner is an
// interface: the hub's runs through the agent tunnel (kube-dry-run.ts); tests and the CLI may
// pass none, and the plan says so.
import type { Job, TaskTemplate } from "../../api/index.ts";
import { JOB_LABEL, TASK_LABEL } from "../../api/index.ts";
import { kindKeyOf } from "../../lib/kube-object.ts";
import { byClusterThen } from "./order.ts";
import type { DryRunResult, JobPlacement } from "./types.ts";

export interface RenderedWorkload {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; labels: Record<string, string> };
  spec: Record<string, unknown>;
}

export type DryRunOutcome =
  | { state: "passed" }
  | { state: "failed"; message: string }
  | { state: "offline"; message?: string };

export interface WorkloadDryRunner {
  /** Server-side dry-run of one object on `cluster`. Never throws: an unreachable agent is "offline". */
  dryRun(cluster: string, workload: RenderedWorkload): Promise<DryRunOutcome>;
}

export const OFFLINE_MESSAGE = "cluster offline, not dry-run";

/**
 * The workload the Kubernetes runtime would create for a task template, as far as admission
 * cares: in the template's namespace (else `namespace`), with a pod template of the template's
 * metadata and spec only, as the runtime's renderer builds it.
 */
export function renderWorkload(
  job: Job,
  template: TaskTemplate,
  namespace: string,
): RenderedWorkload | undefined {
  const workload = template.kubernetes?.workload;
  if (template.agentType !== "Kubernetes" || !workload) return undefined;
  const name = `${job.metadata.name}-${template.name}`;
  const labels = { [JOB_LABEL]: job.metadata.name, [TASK_LABEL]: template.name };
  const podTemplate = workload.template as {
    namespace?: string;
    metadata?: { labels?: Record<string, string> };
    spec?: unknown;
  };
  const template_ = {
    metadata: {
      ...(podTemplate.metadata ?? {}),
      labels: { ...(podTemplate.metadata?.labels ?? {}), ...labels },
    },
    spec: podTemplate.spec,
  };
  const metadata = { name, namespace: podTemplate.namespace || namespace, labels };
  switch (workload.kind) {
    case "Job":
      return {
        apiVersion: "batch/v1",
        kind: "Job",
        metadata,
        spec: { parallelism: workload.replicas ?? 1, template: template_ },
      };
    case "DaemonSet":
      return {
        apiVersion: "apps/v1",
        kind: "DaemonSet",
        metadata,
        spec: { selector: { matchLabels: labels }, template: template_ },
      };
    default:
      return {
        apiVersion: "apps/v1",
        kind: workload.kind,
        metadata,
        spec: {
          replicas: workload.replicas ?? 1,
          selector: { matchLabels: labels },
          template: template_,
          ...(workload.kind === "StatefulSet" ? { serviceName: name } : {}),
        },
      };
  }
}

/** Dry-runs the Kubernetes tasks of every placed Job on its cluster, one cluster at a time per Job. */
export async function runDryRuns(input: {
  jobs: ReadonlyMap<string, Job>;
  placement: readonly JobPlacement[];
  runner: WorkloadDryRunner;
  namespace: string;
}): Promise<DryRunResult[]> {
  const results: DryRunResult[] = [];
  for (const placed of input.placement) {
    if (placed.state !== "placed") continue;
    const job = input.jobs.get(placed.job);
    if (!job) continue;
    for (const task of placed.tasks) {
      const template = job.spec.tasks.find((t) => t.name === task.task);
      const workload = template ? renderWorkload(job, template, input.namespace) : undefined;
      if (!workload) continue;
      const object = kindKeyOf(workload);
      const outcome = await input.runner.dryRun(task.cluster, workload).catch(
        (error: unknown): DryRunOutcome => ({
          state: "offline",
          message: `${OFFLINE_MESSAGE}: ${error instanceof Error ? error.message : String(error)}`,
        }),
      );
      results.push({
        cluster: task.cluster,
        object,
        job: placed.job,
        task: task.task,
        state: outcome.state,
        message:
          outcome.state === "passed"
            ? ""
            : outcome.state === "failed"
              ? outcome.message
              : (outcome.message ?? OFFLINE_MESSAGE),
      });
    }
  }
  return results.sort(byClusterThen((row) => row.object));
}
