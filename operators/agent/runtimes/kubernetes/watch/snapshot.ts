// What the caches hold, mapped to the runtime contract (observe.ts maps each object): nodes with
// what is requested on them, this runtime's workloads, their pods and the Tasks' volume claims.
import type { KubernetesObject, V1Pod } from "@kubernetes/client-node";
import type { ImagePull } from "../../../../api/index.ts";
import {
  AGENT_INSTANCE_LABEL,
  MANAGED_BY_AGENT,
  MANAGED_BY_LABEL,
  TASK_NAME_LABEL,
} from "../../../../api/index.ts";
import type { ObservedPod, ObservedWorkload, RuntimeSnapshot } from "../../types.ts";
import type { DiskFigures } from "../cluster/disk-poller.ts";
import {
  fallbackIndexes,
  observeNode,
  observePod,
  observeVolume,
  observeWorkload,
  podIndex,
  requestedByNode,
  taskGeneration,
} from "./observe.ts";
import { storageClassSummaries } from "./storage-classes.ts";
import type { ClusterWatches } from "./watches.ts";

export interface SnapshotInput {
  watches: ClusterWatches;
  disk: ReadonlyMap<string, DiskFigures>;
  /** Each node's image pre-pull results (images/). */
  images?: (node: string) => ImagePull[] | undefined;
  kubernetesVersion: string | undefined;
  agentVersion: string;
  /** See RenderOptions.instance: a pod counts as ours only with the same instance label. */
  instance: string | undefined;
}

export function buildSnapshot(input: SnapshotInput): RuntimeSnapshot {
  const { watches, agentVersion } = input;
  const allPods = [...watches.pods.values()];
  const requested = requestedByNode(allPods);
  const nodes = [...watches.nodes.values()]
    .map((n) => {
      const name = n.metadata?.name ?? "";
      return observeNode(n, requested.get(name), agentVersion, input.disk.get(name), input.images?.(name));
    })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

  const byTask = new Map<string, V1Pod[]>();
  for (const pod of allPods) {
    const task = pod.metadata?.labels?.[TASK_NAME_LABEL];
    if (!task || !owns(pod, input.instance)) continue;
    const key = `${pod.metadata?.namespace}/${task}`;
    let list = byTask.get(key);
    if (!list) {
      list = [];
      byTask.set(key, list);
    }
    list.push(pod);
  }

  const workloads: ObservedWorkload[] = [];
  const generations = new Map<string, number>();
  for (const [kind, collection] of watches.workloads) {
    for (const obj of collection.values()) {
      const task = obj.metadata?.labels?.[TASK_NAME_LABEL] ?? "";
      const key = `${obj.metadata?.namespace}/${task}`;
      const g = taskGeneration(obj);
      if (g !== undefined) generations.set(key, g);
      workloads.push(observeWorkload(kind, obj, byTask.get(key) ?? []));
    }
  }
  workloads.sort((a, b) =>
    `${a.namespace}/${a.name}/${a.kind}` < `${b.namespace}/${b.name}/${b.kind}` ? -1 : 1,
  );

  const pods: ObservedPod[] = [];
  for (const [key, list] of byTask) {
    const fallback = fallbackIndexes(list.filter((p) => podIndex(p) === undefined));
    for (const pod of list) pods.push(observePod(pod, fallback.get(pod) ?? 0, generations.get(key)));
  }
  pods.sort((a, b) => (`${a.namespace}/${a.name}` < `${b.namespace}/${b.name}` ? -1 : 1));

  const volumes = [...watches.volumes.values()]
    .map(observeVolume)
    .sort((a, b) => (`${a.namespace}/${a.name}` < `${b.namespace}/${b.name}` ? -1 : 1));
  return {
    nodes,
    pods,
    workloads,
    volumes,
    ...(input.kubernetesVersion ? { kubernetesVersion: input.kubernetesVersion } : {}),
    storageClasses: storageClassSummaries(watches.storageClasses.values()),
  };
}

/** Whether this runtime (this instance) made the object: what it reports and serves access to. */
export function owns(obj: KubernetesObject, instance: string | undefined): boolean {
  const labels = obj.metadata?.labels ?? {};
  if (labels[MANAGED_BY_LABEL] !== MANAGED_BY_AGENT) return false;
  return (labels[AGENT_INSTANCE_LABEL] ?? "") === (instance ?? "");
}
