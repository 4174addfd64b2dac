// A Job's room in the placement snapshot between placing a task and its Task existing. Placed
// room is held under the plan's key, grouped per Job so a stop or a fresh run gives it all back;
// just before the Task is created it moves to the Task's key, where the Task's own watch events
// take it over.

import type { Task, TaskTemplate } from "../../api/index.ts";
import { type PlacementSnapshot, placeJob, placementTask, type TaskPlacement } from "../placement/index.ts";

/** The snapshot's key of a Task's room: namespace/name. */
export function taskKey(task: { metadata: { namespace?: string; name: string } }): string {
  return `${task.metadata.namespace}/${task.metadata.name}`;
}

export class JobPlans {
  readonly #snapshot: PlacementSnapshot;
  readonly #job: string;
  readonly #group: string;

  constructor(snapshot: PlacementSnapshot, job: string) {
    this.#snapshot = snapshot;
    this.#job = job;
    this.#group = `plans/${job}`;
  }

  #key(task: string): string {
    return `plan/${this.#job}/${task}`;
  }

  /** Holds the room placement found for one task. */
  reserve(placement: TaskPlacement): void {
    this.#snapshot.reserve(this.#key(placement.task), placement, this.#group);
  }

  /** After a restart of the hub a plan is only in status: holds its room on its cluster again. */
  hold(template: TaskTemplate, cluster: string): void {
    const key = this.#key(template.name);
    if (this.#snapshot.isReserved(key)) return;
    const view = this.#snapshot.clusters().find((c) => c.name === cluster);
    if (!view) return;
    try {
      const result = placeJob({
        tasks: [{ ...placementTask(template), clusterSelector: undefined }],
        clusters: [view],
      });
      if (result.placed && result.tasks[0]) this.#snapshot.reserve(key, result.tasks[0], this.#group);
    } catch {
      // An invalid clusterSelector cannot matter here: the plan names its cluster.
    }
  }

  /** The nodes the plan of `template` holds room on (placement's choice, for image pre-pull). */
  nodes(template: TaskTemplate): string[] {
    return this.#snapshot.reservedNodes(this.#key(template.name));
  }

  /** The plan's room becomes the Task's before the Task exists, so its watch event finds it held. */
  toTask(template: TaskTemplate, task: Task): void {
    this.#snapshot.rekey(this.#key(template.name), taskKey(task));
  }

  /** A Task that was not created gives its room back to its plan. */
  backToPlan(template: TaskTemplate, task: Task): void {
    this.#snapshot.rekey(taskKey(task), this.#key(template.name), this.#group);
  }

  /** Gives back every plan of the Job (a Task's room goes with the Task's own events). */
  releaseAll(): void {
    this.#snapshot.releaseGroup(this.#group);
  }
}
