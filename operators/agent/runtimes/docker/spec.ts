// From desired Tasks to desired containers: pure, so naming, labels and the change detection that
// decides a new run are tested without an engine. Keys and canonical JSON are the process
// runtime's, so both runtimes name pods and detect changes the same way.
import { createHash } from "node:crypto";
import { canonicalJson, podKey, type RejectedTask } from "../process/spec.ts";
import type { DockerWorkload, RuntimeTask } from "../types.ts";

/** Labels on every container this runtime makes: how it finds its own after a restart. */
export const LABELS = {
  owner: "rlinf.io/owner",
  namespace: "rlinf.io/namespace",
  pod: "rlinf.io/pod",
  job: "rlinf.io/job",
  task: "rlinf.io/task",
  /** The task template's name within its Job: the pod's container is reported under it. */
  template: "rlinf.io/template",
  taskUid: "rlinf.io/task-uid",
  replica: "rlinf.io/replica",
  revision: "rlinf.io/revision",
  generation: "rlinf.io/generation",
} as const;

export interface DesiredContainer {
  /** `<namespace>/<pod>` */
  key: string;
  namespace: string;
  /** `<task>-<index>` */
  name: string;
  index: number;
  task: RuntimeTask;
  docker: DockerWorkload;
  /** Changes exactly when the container must be replaced: a new Task uid or a different spec (replicas left out). */
  revision: string;
}

/** The engine's name for a pod's container: `_` never occurs in DNS names, so it cannot be ambiguous. */
export function containerName(namespace: string, pod: string): string {
  return `rlark_${namespace}_${pod}`;
}

export function containerRevision(task: RuntimeTask): string {
  const { replicas: _replicas, ...docker } = task.spec.docker ?? ({} as DockerWorkload);
  const identity = { uid: task.metadata.uid ?? "", docker };
  return createHash("sha256").update(canonicalJson(identity)).digest("hex").slice(0, 16);
}

const dnsSubdomain = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const dnsLabel = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

function strings(value: unknown): boolean {
  return Array.isArray(value) && value.every((v) => typeof v === "string");
}

function validate(task: RuntimeTask): string | undefined {
  if (!dnsSubdomain.test(task.metadata.name)) return "metadata.name must be a DNS-1123 subdomain";
  if (!dnsLabel.test(task.metadata.namespace ?? "")) return "metadata.namespace must be a DNS-1123 label";
  const docker = task.spec.docker;
  if (!docker) return "spec.docker is required for agentType Docker";
  if (typeof docker.image !== "string" || docker.image === "")
    return "spec.docker.image must be an image reference";
  if (docker.command !== undefined && !strings(docker.command))
    return "spec.docker.command must be a list of strings";
  if (docker.args !== undefined && !strings(docker.args)) return "spec.docker.args must be a list of strings";
  if (docker.replicas !== undefined && (!Number.isInteger(docker.replicas) || docker.replicas < 0))
    return "spec.docker.replicas must be a non-negative integer";
  for (const m of docker.mounts ?? [])
    if (!m.hostPath.startsWith("/") || !m.containerPath.startsWith("/") || m.containerPath.includes(":"))
      return `spec.docker.mounts: ${m.hostPath} -> ${m.containerPath} must be absolute paths`;
  for (const d of docker.devices ?? [])
    if (!d.startsWith("/dev/") || d.includes(":"))
      return `spec.docker.devices: ${d} must be a path under /dev`;
  return undefined;
}

/** The containers the given Tasks ask for, and the Docker Tasks that cannot run as given. Other Tasks are skipped. */
export function desiredContainers(tasks: readonly RuntimeTask[]): {
  containers: DesiredContainer[];
  rejected: RejectedTask[];
} {
  const containers: DesiredContainer[] = [];
  const rejected: RejectedTask[] = [];
  for (const task of tasks) {
    if (task.spec.agentType !== "Docker") continue;
    const { name } = task.metadata;
    const namespace = task.metadata.namespace ?? "";
    const problem = validate(task);
    if (problem || !task.spec.docker) {
      rejected.push({ namespace, name, message: `Task ${namespace}/${name}: ${problem}` });
      continue;
    }
    const docker = task.spec.docker;
    const revision = containerRevision(task);
    for (let index = 0; index < (docker.replicas ?? 1); index++) {
      const pod = `${name}-${index}`;
      containers.push({ key: podKey(namespace, pod), namespace, name: pod, index, task, docker, revision });
    }
  }
  return { containers, rejected };
}
