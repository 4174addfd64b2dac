// From desired Tasks to desired pods: pure, so naming, replica counts and the change detection
// that decides restarts are tested without processes.
import { createHash } from "node:crypto";
import { artifactSource } from "../../../api/index.ts";
import type { RawWorkload, RuntimeTask } from "../types.ts";

export type RestartKind = "Deployment" | "StatefulSet" | "Job";

export interface DesiredPod {
  /** `<namespace>/<name>` */
  key: string;
  namespace: string;
  /** `<task>-<index>` */
  name: string;
  index: number;
  kind: RestartKind;
  task: RuntimeTask;
  raw: RawWorkload;
  /**
   * Changes exactly when the pod must be replaced: a new Task uid or a different spec. The
   * replica count is left out, so scaling never restarts the replicas that stay.
   */
  revision: string;
}

export interface RejectedTask {
  namespace: string;
  name: string;
  message: string;
}

export function podKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** JSON with sorted keys, so equal specs hash equally whatever order their fields arrived in. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v ?? null)).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

export function podRevision(task: RuntimeTask): string {
  const { replicas: _replicas, ...raw } = task.spec.raw ?? ({} as RawWorkload);
  const identity = { uid: task.metadata.uid ?? "", raw, domain: task.spec.domain };
  return createHash("sha256").update(canonicalJson(identity)).digest("hex").slice(0, 16);
}

const dnsSubdomain = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const dnsLabel = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

function validate(task: RuntimeTask): string | undefined {
  // Names become directory names under the state dir: nothing may climb out of it.
  if (!dnsSubdomain.test(task.metadata.name) || task.metadata.name.includes(".."))
    return "metadata.name must be a DNS-1123 subdomain";
  if (!dnsLabel.test(task.metadata.namespace ?? "")) return "metadata.namespace must be a DNS-1123 label";
  const raw = task.spec.raw;
  if (!raw) return "spec.raw is required for agentType Raw";
  if (
    !Array.isArray(raw.command) ||
    raw.command.length === 0 ||
    raw.command.some((c) => typeof c !== "string")
  )
    return "spec.raw.command must be a non-empty list of strings";
  if (raw.replicas !== undefined && (!Number.isInteger(raw.replicas) || raw.replicas < 0))
    return "spec.raw.replicas must be a non-negative integer";
  if (raw.artifact && !/^[0-9a-f]{64}$/i.test(raw.artifact.sha256))
    return "spec.raw.artifact.sha256 must be 64 hex digits";
  const source = raw.artifact ? artifactSource(raw.artifact.url) : undefined;
  if (source?.kind === "invalid") return `spec.raw.artifact.url ${source.reason}`;
  // The hub turns repository paths into URLs of its artifact store before the agent sees them.
  if (source?.kind === "repository")
    return "spec.raw.artifact.url is a repository path the hub did not resolve; give a URL";
  return undefined;
}

/** The pods the given Tasks ask for, and the Raw Tasks that cannot run as given. Non-Raw Tasks are skipped. */
export function desiredPods(tasks: readonly RuntimeTask[]): { pods: DesiredPod[]; rejected: RejectedTask[] } {
  const pods: DesiredPod[] = [];
  const rejected: RejectedTask[] = [];
  for (const task of tasks) {
    if (task.spec.agentType !== "Raw") continue;
    const { name } = task.metadata;
    const namespace = task.metadata.namespace ?? "";
    const problem = validate(task);
    if (problem || !task.spec.raw) {
      rejected.push({ namespace, name, message: `Task ${namespace}/${name}: ${problem}` });
      continue;
    }
    const raw = task.spec.raw;
    const revision = podRevision(task);
    const kind = raw.kind ?? "Job";
    for (let index = 0; index < (raw.replicas ?? 1); index++) {
      const podName = `${name}-${index}`;
      pods.push({
        key: podKey(namespace, podName),
        namespace,
        name: podName,
        index,
        kind,
        task,
        raw,
        revision,
      });
    }
  }
  return { pods, rejected };
}
