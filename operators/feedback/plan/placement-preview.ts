// Where each new or changed Job would land on the current Node reports, through the placement
// controller's own pure placeJob, so the preview and the hub never disagree on the rules. Jobs
// are placed one after the other in name order, each taking its room, as the hub would if the
// revision were applied at once. Before placement, as on the hub, a Job of a Team must fit the
// planned Team's quota next to the Jobs the hub has admitted (the quota ledger's own rules).
import type { Cluster, Job, Node, Task, Team } from "../../api/index.ts";
import { JOB_LABEL } from "../../api/index.ts";
import { PlacementSnapshot, placeJob, placementTask } from "../../controllers/placement/index.ts";
import { QuotaLedger } from "../../controllers/quota/index.ts";
import type { KubeObject } from "../../lib/store/index.ts";
import type { JobPlacement, ObjectChange } from "./types.ts";

export interface PlacementPreviewInput {
  /** Planned Jobs (valid ones), by name. */
  jobs: ReadonlyMap<string, Job>;
  /** Planned Teams, by name. */
  teams?: ReadonlyMap<string, Team>;
  changes: readonly ObjectChange[];
  live: readonly KubeObject[];
}

export const PLACEMENT_UNAVAILABLE = "placement preview unavailable: the live state has no Cluster reports";

export function previewPlacement(input: PlacementPreviewInput): { placement: JobPlacement[]; note: string } {
  const touched = input.changes
    .filter((c) => c.kind === "Job" && c.action !== "delete")
    .map((c) => c.name)
    .sort();
  if (touched.length === 0) return { placement: [], note: "" };
  const clusters = input.live.filter((o): o is Cluster => o.kind === "Cluster" && o.status !== undefined);
  if (clusters.length === 0) {
    return {
      placement: touched.map((job) => ({
        job,
        state: "unavailable",
        tasks: [],
        message: PLACEMENT_UNAVAILABLE,
      })),
      note: PLACEMENT_UNAVAILABLE,
    };
  }
  const snapshot = new PlacementSnapshot();
  for (const cluster of clusters) snapshot.setCluster(cluster);
  for (const node of input.live) if (node.kind === "Node") snapshot.setNode(node as Node);
  const replaced = new Set(touched);
  for (const task of input.live) {
    if (task.kind !== "Task") continue;
    // A changed Job's current Tasks give their reservations back: the new ones replace them.
    if (replaced.has(task.metadata.labels?.[JOB_LABEL] ?? "")) continue;
    snapshot.observeTask(task as Task);
  }

  const quota = quotaLedger(input, replaced);
  const placement: JobPlacement[] = [];
  for (const name of touched) {
    const job = input.jobs.get(name);
    if (!job) continue;
    if (job.spec.stopped === true) {
      placement.push({ job: name, state: "stopped", tasks: [], message: "stopped: nothing is placed" });
      continue;
    }
    const team = quota.teamOf(job);
    const decision = team ? quota.admit(job, team, 0) : undefined;
    if (decision && !decision.admit) {
      placement.push({
        job: name,
        state: "waiting",
        tasks: [],
        message: `this Job would wait: ${decision.message}`,
      });
      continue;
    }
    let tasks: ReturnType<typeof placementTask>[];
    try {
      tasks = job.spec.tasks.map(placementTask);
    } catch (error) {
      placement.push({
        job: name,
        state: "unschedulable",
        tasks: [],
        message: error instanceof Error ? error.message : String(error),
      });
      continue;
    }
    const result = placeJob({ tasks, clusters: snapshot.clusters(), spanClusters: Boolean(job.spec.domain) });
    if (!result.placed) {
      placement.push({ job: name, state: "unschedulable", tasks: [], message: result.message });
      continue;
    }
    for (const task of result.tasks) snapshot.reserve(`plan/${name}/${task.task}`, task);
    placement.push({
      job: name,
      state: "placed",
      tasks: result.tasks.map((t) => ({
        task: t.task,
        cluster: t.cluster,
        nodes: t.nodes.map((n) => `${n.node}×${n.replicas}`),
      })),
      message: "",
    });
  }
  return { placement, note: "" };
}

/** The planned Teams, holding what the hub's admitted Jobs hold (changed Jobs are admitted anew). */
function quotaLedger(input: PlacementPreviewInput, replaced: ReadonlySet<string>): QuotaLedger {
  const ledger = new QuotaLedger();
  for (const team of input.teams?.values() ?? []) ledger.setTeam(team);
  for (const object of input.live) {
    if (object.kind !== "Job" || replaced.has(object.metadata.name)) continue;
    const job = object as Job;
    const reserved = job.status?.conditions?.find((c) => c.type === "QuotaReserved")?.status === "True";
    if (reserved && !["Succeeded", "Failed", "Stopped"].includes(job.status?.phase ?? ""))
      ledger.adopt(job, 0);
  }
  return ledger;
}
