// Which Jobs a change of a Task, Node or Cluster concerns. The same events keep the placement
// snapshot current, so what placement reads is as fresh as what the watches have seen.
//
//   Task     → its owner Job; and the Jobs waiting for room when the change gave room back
//   Node     → the Jobs waiting for room, when the change is one placement reads (Jobs waiting
//              for quota are woken by the ledger, when quota they fit is given back)
//   Cluster  → the waiting Jobs and the Jobs with Tasks on that cluster (offline handling)
//   Team     → the Jobs waiting for quota
//   Job      → none (the controller's own watch): counted as waiting for quota (ledger.expect)

import type { Cluster, Job, Node, Task, Team } from "../../api/index.ts";
import { clusterOf, JOB_LABEL } from "../../api/index.ts";
import { ownerKeys, type WatchSpec } from "../../lib/controller/index.ts";
import type { KubeObject } from "../../lib/store/index.ts";
import type { PlacementSnapshot } from "../placement/index.ts";
import type { QuotaLedger } from "../quota/index.ts";
import { taskKey } from "./plans.ts";

export class JobWatchTable {
  readonly watches: readonly WatchSpec[];
  /** Jobs waiting for room: any Node or Cluster change queues them. */
  readonly #waiting = new Set<string>();
  /** cluster → (Task name → Job) of the Tasks there: a Cluster change queues their Jobs. */
  readonly #jobsOnCluster = new Map<string, Map<string, string>>();

  constructor(snapshot: PlacementSnapshot, quota: QuotaLedger) {
    const toOwners = ownerKeys("Job", { controllerOnly: true });
    this.watches = [
      {
        kind: "Task",
        mapToKeys: (object, type) => {
          const key = taskKey(object);
          const held = snapshot.isReserved(key);
          snapshot.observeTask(object as Task, type === "DELETED");
          this.#trackTask(object, type === "DELETED");
          const owners = toOwners(object, type);
          // Room given back (a Task deleted or started) may be what a waiting Job needs.
          return held && !snapshot.isReserved(key) ? new Set([...owners, ...this.#waiting]) : owners;
        },
      },
      {
        kind: "Node",
        mapToKeys: (object, type) => {
          if (type === "DELETED") {
            snapshot.deleteNode(
              object.metadata.namespace,
              object.metadata.name,
              Number(object.metadata.resourceVersion),
            );
            return [...this.#waiting];
          }
          // Heartbeats that change nothing placement reads wake nobody.
          return snapshot.setNode(object as Node) ? [...this.#waiting] : [];
        },
      },
      {
        kind: "Cluster",
        mapToKeys: (object, type) => {
          const name = object.metadata.name;
          if (type === "DELETED") snapshot.deleteCluster(name, Number(object.metadata.resourceVersion));
          else if (!snapshot.setCluster(object as Cluster)) return [];
          return new Set([...this.#waiting, ...(this.#jobsOnCluster.get(name)?.values() ?? [])]);
        },
      },
      {
        // A Job seen counts as waiting for quota before its first reconcile (ledger.expect);
        // the controller's own watch of Jobs queues it.
        kind: "Job",
        mapToKeys: (object, type) => {
          if (type === "DELETED") quota.forget(object.metadata.name);
          else quota.expect(object as Job);
          return [];
        },
      },
      {
        // A quota changed: the Jobs waiting for quota may fit now.
        kind: "Team",
        mapToKeys: (object, type) =>
          type === "DELETED" ? quota.deleteTeam(object.metadata.name) : quota.setTeam(object as Team),
      },
    ];
  }

  /** Records after a reconcile whether the Job waits for room. */
  setWaiting(job: string, waiting: boolean): void {
    if (waiting) this.#waiting.add(job);
    else this.#waiting.delete(job);
  }

  #trackTask(task: KubeObject, deleted: boolean): void {
    const cluster = clusterOf(task.metadata.namespace);
    const job = task.metadata.labels?.[JOB_LABEL];
    if (!cluster || !job) return;
    let jobs = this.#jobsOnCluster.get(cluster);
    if (!jobs) {
      jobs = new Map();
      this.#jobsOnCluster.set(cluster, jobs);
    }
    if (deleted) jobs.delete(task.metadata.name);
    else jobs.set(task.metadata.name, job);
  }
}
