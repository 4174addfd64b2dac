// A window of a sorted list: the objects after a position, at most a limit of them. Backends that
// cannot read a range (the Kubernetes cache, a label-selector query) cut their sorted list here.
import type { KubeObject, ListPosition } from "./types.ts";

export interface ListWindow {
  after?: ListPosition;
  limit?: number;
}

/** Whether `object` comes after `position` in (namespace, name) order. */
export function isAfter(object: KubeObject, position: ListPosition): boolean {
  const namespace = object.metadata.namespace ?? "";
  if (namespace !== position.namespace) return namespace > position.namespace;
  return object.metadata.name > position.name;
}

/** `items` sorted by namespace, then name; the part of them the window covers. */
export function listWindow<T extends KubeObject>(items: T[], window: ListWindow): T[] {
  let start = 0;
  if (window.after) {
    // Binary search for the first item after the position.
    let hi = items.length;
    while (start < hi) {
      const mid = (start + hi) >>> 1;
      if (isAfter(items[mid]!, window.after)) hi = mid;
      else start = mid + 1;
    }
  }
  const end = window.limit === undefined ? items.length : start + Math.max(0, window.limit);
  return start === 0 && end >= items.length ? items : items.slice(start, end);
}
