// Which pods belong to a Domain and what they claim, and the DomainPeers they imply. Pure.

import type { DomainPeerPod, DomainPeerSpec, DomainPeerTask, Pod } from "../../api/index.ts";
import { clusterOf, JOB_LABEL, TASK_LABEL } from "../../api/index.ts";
import { type Allocation, type Claim, claimKey, ipToInt } from "./ipam.ts";

/** The Job a mirrored Pod belongs to: its rlinf.io/job label, else spec.job. */
export function podJob(pod: Pod): string | undefined {
  return pod.metadata.labels?.[JOB_LABEL] ?? pod.spec.job;
}

/**
 * The address claim of a pod of one of the Domain's Jobs, keyed by job / task template / pod
 * name so a pod re-created under its name claims the same address. The Task is named
 * `<job>-<task>`; the claim records the template name, as Domain status does (seed §2).
 */
export function claimOf(pod: Pod): Claim | undefined {
  const job = podJob(pod);
  const cluster = clusterOf(pod.metadata.namespace);
  if (!job || !cluster || pod.metadata.deletionTimestamp) return undefined;
  let task = pod.spec.task ?? pod.metadata.labels?.[TASK_LABEL] ?? "";
  if (task.startsWith(`${job}-`)) task = task.slice(job.length + 1);
  return { job, task, pod: pod.metadata.name, cluster };
}

/**
 * DomainPeer specs by namespace: each cluster's pods that hold an address, ordered by IP, and
 * that cluster's own certificate and key.
 */
export function peerSpecs(input: {
  pods: readonly Pod[];
  allocations: readonly Allocation[];
  credentials: (cluster: string) => { certPem: string; keyPem: string };
  prefixLen: number;
}): Map<string, DomainPeerSpec> {
  const ipOf = new Map(input.allocations.map((a) => [claimKey(a), a.ip]));
  const byNamespace = new Map<string, DomainPeerPod[]>();
  const byTask = new Map<string, string[]>();
  for (const pod of input.pods) {
    const claim = claimOf(pod);
    const ip = claim && ipOf.get(claimKey(claim));
    if (!claim || !ip) continue;
    const task = `${claim.job}-${claim.task}`;
    byTask.set(task, [...(byTask.get(task) ?? []), ip]);
    const namespace = pod.metadata.namespace as string;
    const entry: DomainPeerPod = { name: pod.metadata.name, ip, globalNamespace: namespace };
    if (pod.spec.namespace !== undefined) entry.namespace = pod.spec.namespace;
    if (pod.spec.uid !== undefined) entry.uid = pod.spec.uid;
    if (pod.status?.podIP) entry.localIP = pod.status.podIP;
    if (pod.spec.node !== undefined) entry.node = pod.spec.node;
    const list = byNamespace.get(namespace) ?? [];
    list.push(entry);
    byNamespace.set(namespace, list);
  }
  // every cluster learns the whole Domain's Tasks: a Ray worker's agent finds its head's address
  const tasks: DomainPeerTask[] = [...byTask.keys()].sort().map((name) => ({
    name,
    ips: (byTask.get(name) ?? []).sort((a, b) => (ipToInt(a) ?? 0) - (ipToInt(b) ?? 0)),
  }));
  const specs = new Map<string, DomainPeerSpec>();
  for (const namespace of [...byNamespace.keys()].sort()) {
    const pods = (byNamespace.get(namespace) ?? []).sort(
      (a, b) => (ipToInt(a.ip) ?? 0) - (ipToInt(b.ip) ?? 0),
    );
    const { certPem, keyPem } = input.credentials(clusterOf(namespace) as string);
    specs.set(namespace, { cert: certPem, key: keyPem, prefixLen: input.prefixLen, pods, tasks });
  }
  return specs;
}
