// The runtime's caches of the cluster: Nodes and Pods (every one: a node's requested counts
// whatever runs there), StorageClasses, and, found by label, the workloads and the Tasks' volume
// claims.
import type {
  KubeConfig,
  KubernetesObject,
  V1Node,
  V1PersistentVolumeClaim,
  V1Pod,
  V1StorageClass,
} from "@kubernetes/client-node";
import type { Logger } from "../../../../lib/logger.ts";
import type { WorkloadKind } from "../../types.ts";
import type { AnyWorkload } from "./observe.ts";
import { WatchedCollection } from "./watched-collection.ts";

export const WORKLOADS: readonly { kind: WorkloadKind; apiVersion: string; path: string }[] = [
  { kind: "Deployment", apiVersion: "apps/v1", path: "/apis/apps/v1/deployments" },
  { kind: "StatefulSet", apiVersion: "apps/v1", path: "/apis/apps/v1/statefulsets" },
  { kind: "DaemonSet", apiVersion: "apps/v1", path: "/apis/apps/v1/daemonsets" },
  { kind: "Job", apiVersion: "batch/v1", path: "/apis/batch/v1/jobs" },
];

export interface ClusterWatches {
  readonly nodes: WatchedCollection<V1Node>;
  readonly pods: WatchedCollection<V1Pod>;
  readonly volumes: WatchedCollection<V1PersistentVolumeClaim>;
  readonly storageClasses: WatchedCollection<V1StorageClass>;
  readonly workloads: ReadonlyMap<WorkloadKind, WatchedCollection<AnyWorkload>>;
  /** Every collection, to start, wait for and stop together. */
  readonly all: readonly WatchedCollection<KubernetesObject>[];
}

export interface WatchOptions {
  kubeConfig: KubeConfig;
  logger: Logger;
  relistIntervalMs?: number | undefined;
  /** Selects the objects this runtime owns (workloads and claims). */
  selector: string;
  /** Any cached set changed. */
  onChange: () => void;
  /** The Nodes changed (after onChange). */
  onNodeChange: () => void;
}

/** Makes the collections; they start with {@link ClusterWatches.all}. */
export function watchCluster(options: WatchOptions): ClusterWatches {
  const common = {
    kubeConfig: options.kubeConfig,
    logger: options.logger,
    ...(options.relistIntervalMs ? { relistIntervalMs: options.relistIntervalMs } : {}),
  };
  const onChange = () => options.onChange();
  const nodes = new WatchedCollection<V1Node>({
    ...common,
    apiVersion: "v1",
    kind: "Node",
    path: "/api/v1/nodes",
    onChange: () => {
      options.onChange();
      options.onNodeChange();
    },
  });
  const pods = new WatchedCollection<V1Pod>({
    ...common,
    apiVersion: "v1",
    kind: "Pod",
    path: "/api/v1/pods",
    onChange,
  });
  const volumes = new WatchedCollection<V1PersistentVolumeClaim>({
    ...common,
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    path: "/api/v1/persistentvolumeclaims",
    labelSelector: options.selector,
    onChange,
  });
  const storageClasses = new WatchedCollection<V1StorageClass>({
    ...common,
    apiVersion: "storage.k8s.io/v1",
    kind: "StorageClass",
    path: "/apis/storage.k8s.io/v1/storageclasses",
    onChange,
  });
  const workloads = new Map<WorkloadKind, WatchedCollection<AnyWorkload>>();
  for (const w of WORKLOADS) {
    workloads.set(
      w.kind,
      new WatchedCollection<AnyWorkload>({
        ...common,
        apiVersion: w.apiVersion,
        kind: w.kind,
        path: w.path,
        labelSelector: options.selector,
        onChange,
      }),
    );
  }
  return {
    nodes,
    pods,
    volumes,
    storageClasses,
    workloads,
    all: [nodes, pods, volumes, storageClasses, ...workloads.values()],
  };
}
