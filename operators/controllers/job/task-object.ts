// The Task a Job's template becomes on a cluster (pure). Names are deterministic
// (`<job>-<task>` in `agent-<cluster>`), so creating one twice is an AlreadyExists, never a copy.

import type { Job, Task, TaskSpec, TaskTemplate } from "../../api/index.ts";
import {
  AGENT_CLEANUP_FINALIZER,
  JOB_LABEL,
  namespaceFor,
  PLACED_NODES_ANNOTATION,
  RUN_LABEL,
  TASK_LABEL,
  WORKFLOW_LABEL,
} from "../../api/index.ts";

export function taskObjectName(job: string, task: string): string {
  return `${job}-${task}`;
}

/** The Task's spec: the template's fields plus job, task, run, domain and the Domain's CIDR. */
export function taskSpec(job: Job, template: TaskTemplate, run: number, domainCIDR?: string): TaskSpec {
  const { name, clusterSelector: _placementOnly, sshPublicKey, ...rest } = template;
  const key = sshPublicKey ?? job.spec.sshPublicKey;
  return {
    ...rest,
    job: job.metadata.name,
    task: name,
    run,
    ...(job.spec.domain ? { domain: job.spec.domain } : {}),
    ...(job.spec.domain && domainCIDR ? { domainCIDR } : {}),
    ...(key ? { sshPublicKey: key } : {}),
  };
}

export function taskObject(
  job: Job,
  template: TaskTemplate,
  cluster: string,
  run: number,
  domainCIDR?: string,
  placedNodes: readonly string[] = [],
): Task {
  const labels: Record<string, string> = {
    [JOB_LABEL]: job.metadata.name,
    [TASK_LABEL]: template.name,
    [RUN_LABEL]: String(run),
  };
  const workflow = job.metadata.labels?.[WORKFLOW_LABEL];
  if (workflow) labels[WORKFLOW_LABEL] = workflow;
  return {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Task",
    metadata: {
      name: taskObjectName(job.metadata.name, template.name),
      namespace: namespaceFor(cluster),
      labels,
      ...annotationsOf(template, placedNodes),
      ownerReferences: [
        {
          apiVersion: job.apiVersion,
          kind: "Job",
          name: job.metadata.name,
          uid: job.metadata.uid ?? "",
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
      finalizers: [AGENT_CLEANUP_FINALIZER],
    },
    spec: taskSpec(job, template, run, domainCIDR),
  };
}

/** The run a Task belongs to (its rlark.io/run label), or 0. */
export function runOf(task: Task): number {
  const value = Number(task.metadata.labels?.[RUN_LABEL] ?? task.spec.run ?? 0);
  return Number.isInteger(value) ? value : 0;
}

export function ownedBy(task: Task, job: Job): boolean {
  return (task.metadata.ownerReferences ?? []).some(
    (ref) => ref.kind === "Job" && ref.uid === job.metadata.uid,
  );
}

/** Bounds what one annotation carries: a node name is at most 253 characters. */
const MAX_PLACED_NODES = 64;

function annotationsOf(
  template: TaskTemplate,
  placedNodes: readonly string[],
): { annotations?: Record<string, string> } {
  // The seed's Ray integration reads the template's from the Task's own annotations.
  const annotations = template.annotations ? definedValues(template.annotations) : {};
  // Where placement counted the replicas: the agent pre-pulls the images there (ADR 0012).
  if (placedNodes.length > 0)
    annotations[PLACED_NODES_ANNOTATION] = placedNodes.slice(0, MAX_PLACED_NODES).join(",");
  return Object.keys(annotations).length > 0 ? { annotations } : {};
}

function definedValues(record: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(record)) if (value !== undefined) out[key] = value;
  return out;
}
