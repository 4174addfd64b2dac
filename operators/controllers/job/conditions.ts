// Kubernetes-shaped conditions and a short event log on the Job's status: together they say
// what happened to a Job and why, where `kubectl describe` would show Events.

import type { Condition, JobEvent } from "../../api/index.ts";

export const MAX_EVENTS = 20;

/** RFC 3339 to the second, as Kubernetes writes times. */
export function timestamp(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/**
 * Sets a condition by type. lastTransitionTime moves only when status changes, so it says
 * since when the condition has held.
 */
export function setCondition(
  conditions: Condition[],
  next: { type: string; status: Condition["status"]; reason: string; message: string },
  now: number,
  observedGeneration?: number,
): void {
  const index = conditions.findIndex((c) => c.type === next.type);
  const previous = index === -1 ? undefined : conditions[index];
  const condition: Condition = {
    type: next.type,
    status: next.status,
    reason: next.reason,
    message: next.message,
    lastTransitionTime:
      previous && previous.status === next.status && previous.lastTransitionTime
        ? previous.lastTransitionTime
        : timestamp(now),
    ...(observedGeneration !== undefined ? { observedGeneration } : {}),
  };
  if (index === -1) conditions.push(condition);
  else conditions[index] = condition;
}

export function getCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Appends an event, keeping the latest MAX_EVENTS. */
export function appendEvent(events: JobEvent[], event: JobEvent): void {
  events.push(event);
  if (events.length > MAX_EVENTS) events.splice(0, events.length - MAX_EVENTS);
}
