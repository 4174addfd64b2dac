// Drift of one object: what a server-side apply of the Bundle's manifest would change in the live
// object, found by applying it as a dry run and comparing the result with what is there. Only the
// fields the Bundle's manifest sets can differ (server-side apply leaves other managers' fields
// alone), so a hand edit of a field the Bundle does not set is no drift. Pure.
import type { KubernetesObject } from "@kubernetes/client-node";

/** Bookkeeping the API server changes on every write, and what controllers report. */
export function comparable(object: KubernetesObject): Record<string, unknown> {
  const { status: _status, ...rest } = object as KubernetesObject & { status?: unknown };
  const {
    managedFields: _m,
    resourceVersion: _r,
    generation: _g,
    creationTimestamp: _c,
    uid: _u,
    ...metadata
  } = rest.metadata ?? {};
  return { ...rest, metadata };
}

/** JSON pointers of the leaves that differ between the live object and the dry run, at most `limit`. */
export function driftedFields(live: KubernetesObject, dryRun: KubernetesObject, limit = 16): string[] {
  const out: string[] = [];
  const walk = (a: unknown, b: unknown, pointer: string) => {
    if (out.length >= limit) return;
    if (a === b) return;
    const objects = typeof a === "object" && a !== null && typeof b === "object" && b !== null;
    if (!objects || Array.isArray(a) !== Array.isArray(b)) {
      if (JSON.stringify(a) !== JSON.stringify(b)) out.push(pointer || "/");
      return;
    }
    const left = a as Record<string, unknown>;
    const right = b as Record<string, unknown>;
    for (const key of [...new Set([...Object.keys(left), ...Object.keys(right)])].sort()) {
      walk(left[key], right[key], `${pointer}/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`);
    }
  };
  walk(comparable(live), comparable(dryRun), "");
  return out;
}
