// The digest of what a run is made from: the task templates and the Job fields copied into every
// Task (domain, sshPublicKey). A different digest means a different run. Key order does not count,
// so reformatting the YAML never restarts a Job.

import { createHash } from "node:crypto";
import type { Job } from "../../api/index.ts";

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v ?? null)).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** 16 hex digits of SHA-256 over the run-making parts of the Job's spec. */
export function specHash(job: Job): string {
  const { tasks, domain, sshPublicKey } = job.spec;
  return createHash("sha256")
    .update(canonicalJson({ tasks, domain, sshPublicKey }))
    .digest("hex")
    .slice(0, 16);
}
