// Placing a run's missing tasks, all or nothing, and choosing which Tasks to create now (the
// head first, when one is declared; the others once it runs). Decides on the status draft and
// the placement snapshot; the caller creates the Tasks it hands back.

import type { Job, Task, TaskTemplate } from "../../api/index.ts";
import { clusterOf } from "../../api/index.ts";
import {
  type PlacementSnapshot,
  type PlacementTask,
  placeJob,
  placementTask,
  type UnplacedReason,
} from "../placement/index.ts";
import { getCondition } from "./conditions.ts";
import type { JobPlans } from "./plans.ts";
import { isTerminal, started } from "./rollup.ts";
import type { StatusDraft } from "./status-draft.ts";
import { taskObject } from "./task-object.ts";

export interface PlaceInput {
  draft: StatusDraft;
  job: Job;
  run: number;
  snapshot: PlacementSnapshot;
  plans: JobPlans;
  /** The run's live Tasks by template name; the Tasks to create are added. */
  current: Map<string, Task>;
  /** The CIDR of the Job's Domain, copied into the Tasks created. */
  domainCIDR?: string;
}

/** A Task to create, its room already moved from its plan to it. */
export interface TaskToCreate {
  template: TaskTemplate;
  object: Task;
}

export interface Placed {
  creates: TaskToCreate[];
  /** No room for the missing tasks (the Scheduled condition says why). */
  unschedulable?: boolean;
}

export function placeTasks(input: PlaceInput): Placed {
  const { draft, job, run, snapshot, plans, current } = input;
  const templates = job.spec.tasks;
  const entries = new Map((draft.status.tasks ?? []).map((t) => [t.name, t]));
  const missing = templates.filter((t) => !current.has(t.name));
  if (missing.length === 0) return { creates: [] };

  // Plans made earlier in this run hold, if their cluster is still Online.
  const planned = new Map<string, string>();
  for (const template of missing) {
    const cluster = entries.get(template.name)?.cluster;
    if (cluster && snapshot.cluster(cluster)?.status?.phase === "Online") planned.set(template.name, cluster);
  }
  // After a restart of the hub the plans are only in status: hold their room again first.
  for (const template of missing) {
    const cluster = planned.get(template.name);
    if (cluster) plans.hold(template, cluster);
  }
  const unplanned = missing.filter((t) => !planned.has(t.name));
  if (unplanned.length > 0) {
    let wanted: PlacementTask[];
    try {
      wanted = unplanned.map(placementTask);
    } catch (error) {
      unschedulable(draft, error instanceof Error ? error.message : String(error));
      return { creates: [], unschedulable: true };
    }
    const span = Boolean(job.spec.domain);
    // Without a Domain the rest of the run is already somewhere: the missing tasks join it.
    const joined = span ? undefined : runCluster(current, planned);
    const clusters = joined
      ? snapshot.clusters().filter((c) => c.name === joined.cluster)
      : snapshot.clusters();
    // where the run's other tasks are, for `near` constraints naming them
    const placedElsewhere = new Map(planned);
    for (const [template, task] of current) {
      const cluster = clusterOf(task.metadata.namespace);
      if (cluster) placedElsewhere.set(template, cluster);
    }
    const result = placeJob({ tasks: wanted, clusters, spanClusters: span, placed: placedElsewhere });
    if (!result.placed) {
      unschedulable(
        draft,
        joined
          ? `${result.message}; a Job without a Domain runs in one cluster, and ${joined.tasks.join(", ")} ${joined.tasks.length === 1 ? "is" : "are"} in ${joined.cluster}`
          : result.message,
        result.reason,
      );
      return { creates: [], unschedulable: true };
    }
    for (const p of result.tasks) {
      plans.reserve(p);
      planned.set(p.task, p.cluster);
      const entry = entries.get(p.task);
      if (entry) {
        entry.cluster = p.cluster;
        entry.phase = "Scheduled";
      }
    }
    const where = result.tasks.map((p) => `${p.task} → ${p.cluster}`).join(", ");
    draft.condition("Scheduled", "True", "Placed", where);
    draft.event("Normal", "Scheduled", `placed ${where}`);
    // The opt-out of the process runtime's pod users is on the record at every run, in the Job's
    // status history, besides the agent's log at every start (docs/process-runtime.md#users).
    const asRoot = templates.filter((t) => t.raw?.runAsRoot === true).map((t) => t.name);
    if (asRoot.length > 0)
      draft.event(
        "Warning",
        "RunAsRoot",
        `${asRoot.join(", ")} run as root on the agent: raw.runAsRoot is set`,
      );
  }

  const head = templates.find((t) => t.head);
  const headStarted = !head || started(current.get(head.name));
  const creates: TaskToCreate[] = [];
  for (const template of headStarted ? missing : missing.filter((t) => t === head)) {
    const cluster = planned.get(template.name);
    if (!cluster) continue;
    const object = taskObject(job, template, cluster, run, input.domainCIDR, plans.nodes(template));
    plans.toTask(template, object);
    creates.push({ template, object });
    current.set(template.name, object);
  }
  return { creates };
}

/**
 * The cluster a Job without a Domain already runs in: where its live Tasks of this run (or its
 * held plans) are. Finished Tasks do not hold the Job there.
 */
function runCluster(
  current: ReadonlyMap<string, Task>,
  planned: ReadonlyMap<string, string>,
): { cluster: string; tasks: string[] } | undefined {
  const where = new Map<string, string[]>();
  const add = (cluster: string, task: string) => where.set(cluster, [...(where.get(cluster) ?? []), task]);
  for (const [template, task] of current) {
    const cluster = clusterOf(task.metadata.namespace);
    if (cluster && !isTerminal(task.status?.phase)) add(cluster, template);
  }
  for (const [template, cluster] of planned) add(cluster, template);
  const [first] = [...where].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return first ? { cluster: first[0], tasks: first[1].sort() } : undefined;
}

function unschedulable(draft: StatusDraft, message: string, reason: UnplacedReason = "Unschedulable"): void {
  const previous = getCondition(draft.status.conditions, "Scheduled");
  draft.condition("Scheduled", "False", reason, message);
  if (previous?.message !== message || previous.status !== "False") draft.event("Warning", reason, message);
}
