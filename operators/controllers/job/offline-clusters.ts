// Tasks on clusters that are not Online. A Task not yet started on a cluster Offline past the
// grace period is placed elsewhere; a running one is never moved, and a Job without a Domain
// stays on the cluster where another of its tasks runs. Decides on the status draft and the
// placement snapshot; the caller deletes the Tasks it hands back.

import type { Cluster, Job, Task } from "../../api/index.ts";
import { clusterOf } from "../../api/index.ts";
import { offlineSince, type PlacementSnapshot } from "../placement/index.ts";
import { getCondition, timestamp } from "./conditions.ts";
import { started } from "./rollup.ts";
import type { StatusDraft } from "./status-draft.ts";

export interface OfflineReview {
  /** Tasks to delete so their tasks are placed again, by template name. */
  replace: Map<string, Task>;
  /** When the next grace period ends (ms from now), if one is running. */
  requeueAfter?: number;
}

export class OfflineClusters {
  readonly #snapshot: PlacementSnapshot;
  readonly #grace: number;
  /** When this process first saw a cluster Offline, for clusters that report no transition time. */
  readonly #noticed = new Map<string, number>();

  constructor(snapshot: PlacementSnapshot, grace: number) {
    this.#snapshot = snapshot;
    this.#grace = grace;
  }

  /** `current`: the run's live Tasks by template name. */
  review(draft: StatusDraft, job: Job, current: ReadonlyMap<string, Task>): OfflineReview {
    const grace = this.#grace;
    const review: OfflineReview = { replace: new Map() };
    const stranded: string[] = [];
    // Without a Domain a task cannot leave the cluster where the rest of its Job runs.
    const runningOn = new Map<string, string>();
    if (!job.spec.domain) {
      for (const [template, task] of current) {
        const cluster = clusterOf(task.metadata.namespace);
        if (cluster && task.status?.phase === "Running" && !runningOn.has(cluster))
          runningOn.set(cluster, template);
      }
    }
    for (const [template, task] of current) {
      const cluster = clusterOf(task.metadata.namespace) ?? "";
      const object = this.#snapshot.cluster(cluster);
      if (object?.status?.phase === "Online") {
        this.#noticed.delete(cluster);
        continue;
      }
      // A cluster removed from git counts as Offline from when this controller noticed.
      const state = object ? "Offline" : "not registered";
      if (task.status?.phase === "Running") {
        stranded.push(`task ${template} runs on cluster ${cluster}, which is ${state}; it is not moved`);
        continue;
      }
      if (started(task)) continue;
      const anchor = runningOn.get(cluster);
      if (anchor) {
        stranded.push(
          `task ${template} waits for cluster ${cluster}, which is ${state}: a Job without a Domain runs in one cluster, and task ${anchor} runs there`,
        );
        continue;
      }
      const since = this.#offlineSince(cluster, object, draft.now);
      const left = since + grace - draft.now;
      if (left > 0) {
        review.requeueAfter = Math.min(review.requeueAfter ?? left, left);
        continue;
      }
      review.replace.set(template, task);
      const entry = draft.status.tasks?.find((t) => t.name === template);
      if (entry) {
        delete entry.cluster;
        entry.phase = "Pending";
      }
      draft.event(
        "Warning",
        "Replacing",
        `task ${template}: cluster ${cluster} has been ${state} since ${timestamp(since)}, longer than ${Math.round(grace / 1000)}s; placing it elsewhere`,
      );
    }
    if (stranded.length > 0) draft.condition("ClusterOffline", "True", "ClusterOffline", stranded.join("; "));
    else if (getCondition(draft.status.conditions, "ClusterOffline")) {
      draft.condition("ClusterOffline", "False", "ClustersOnline", "every running task's cluster is Online");
    }
    return review;
  }

  #offlineSince(name: string, cluster: Cluster | undefined, now: number): number {
    const reported = cluster ? offlineSince(cluster) : undefined;
    if (reported !== undefined) return reported;
    const noticed = this.#noticed.get(name);
    if (noticed !== undefined) return noticed;
    this.#noticed.set(name, now);
    return now;
  }
}
