// The Job status one reconcile builds: a copy of the stored status that the steps change and
// that is written once at the end. Conditions and events carry the reconcile's time.

import type { Job, JobEvent, JobStatus } from "../../api/index.ts";
import { appendEvent, setCondition, timestamp } from "./conditions.ts";

export class StatusDraft {
  readonly status: JobStatus;
  /** The reconcile's time (ms), from the controller's clock. */
  readonly now: number;
  readonly #generation: number | undefined;

  constructor(job: Job, now: number) {
    this.status = structuredClone(job.status ?? {});
    this.now = now;
    this.#generation = job.metadata.generation;
  }

  condition(type: string, status: "True" | "False" | "Unknown", reason: string, message: string): void {
    this.status.conditions ??= [];
    setCondition(this.status.conditions, { type, status, reason, message }, this.now, this.#generation);
  }

  event(type: JobEvent["type"], reason: string, message: string): void {
    this.status.events ??= [];
    appendEvent(this.status.events, {
      time: timestamp(this.now),
      type,
      reason,
      ...(this.status.run ? { run: this.status.run } : {}),
      message,
    });
  }
}
