// DNS-1123 label names of at most 63 characters: a name that would be longer is cut and given a
// short hash of the full name, so two long names never collide (cdk8s' names.ts does the same).
import { createHash } from "node:crypto";

const MAX = 63;

export function dnsLabel(...parts: string[]): string {
  const full = parts.filter((p) => p !== "").join("-");
  if (full.length <= MAX) return full;
  const hash = createHash("sha256").update(full).digest("hex").slice(0, 8);
  const head = full.slice(0, MAX - hash.length - 1).replace(/-+$/, "");
  return `${head}-${hash}`;
}

/** The headless Service of a StatefulSet: named like the StatefulSet, so pods get stable DNS names. */
export const headlessServiceName = (task: string): string => task;
export const sshConfigMapName = (task: string): string => dnsLabel(task, "ssh");
export const rayConfigMapName = (task: string): string => dnsLabel(task, "ray");
/** The Service in front of a Ray head's pods; workers reach the head's GCS through it. */
export const rayHeadServiceName = (headTask: string): string => dnsLabel(headTask, "ray-head");
