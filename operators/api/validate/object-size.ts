// Size caps on one object, as Kubernetes enforces them, so a revision the hub accepts cannot hold
// objects that bloat the store, every API response and every watch event, or that a cluster
// would refuse when the object (or its annotations) reaches it.
import type { SchemaViolation } from "../violations.ts";
import { isObject } from "./rule-context.ts";

/** Kubernetes' TotalAnnotationSizeLimitB: the bytes of every key and value together. */
export const MAX_ANNOTATION_BYTES = 256 * 1024;
/**
 * The object as JSON. etcd refuses requests over 1.5 MiB; the hub adds its own annotations and a
 * status to what git holds, so git's part is kept well under that.
 */
export const MAX_OBJECT_BYTES = 1024 * 1024;

export function sizeViolations(object: Record<string, unknown>): SchemaViolation[] {
  const violations: SchemaViolation[] = [];
  const annotations = isObject(object.metadata) ? object.metadata.annotations : undefined;
  if (isObject(annotations)) {
    // Counted as ValidateAnnotationsSize counts: UTF-8 bytes of each key plus its value.
    let total = 0;
    for (const [key, value] of Object.entries(annotations)) {
      total += Buffer.byteLength(key) + (typeof value === "string" ? Buffer.byteLength(value) : 0);
    }
    if (total > MAX_ANNOTATION_BYTES) {
      violations.push({
        path: "/metadata/annotations",
        rule: "size/annotations",
        message: `annotations (keys and values) total ${formatBytes(total)}, over Kubernetes' limit of ${formatBytes(MAX_ANNOTATION_BYTES)}; keep large data in a file or a ConfigMap`,
      });
    }
  }
  const bytes = Buffer.byteLength(JSON.stringify(object));
  if (bytes > MAX_OBJECT_BYTES) {
    violations.push({
      path: "",
      rule: "size/object",
      message: `the object is ${formatBytes(bytes)} as JSON, over the ${formatBytes(MAX_OBJECT_BYTES)} limit for one object; split it or move data out of the manifest`,
    });
  }
  return violations;
}

function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${(n / 1024 / 1024).toFixed(2)} MiB (${n} bytes)`;
  return `${(n / 1024).toFixed(1)} KiB (${n} bytes)`;
}
