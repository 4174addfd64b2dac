// What a cluster's agent should hold: its Tasks, AddonReleases, BundleReleases, DomainPeers and
// Node overlays.

import { AGENT_CLEANUP_FINALIZER, MANAGED_BY_GIT, MANAGED_BY_LABEL, namespaceFor } from "../api/index.ts";
import { type KubeObject, kindKeyOf } from "../lib/kube-object.ts";
import type { Store } from "../lib/store/index.ts";
import { artifactUrl, isRepositoryPath, overlayKeys, pickKeys } from "../source/index.ts";

export interface DesiredSetOptions {
  /** Where the hub keeps repository artifacts by SHA-256 (see artifacts.ts). */
  artifactDir: string;
}

/**
 * The objects handed to the agent of `cluster`. A Task being deleted is left out: the agent
 * prunes it, and the hub releases the Task's cleanup finalizer once the agent reports it gone.
 */
export async function desiredForCluster(
  store: Store,
  cluster: string,
  options: DesiredSetOptions,
): Promise<KubeObject[]> {
  const namespace = namespaceFor(cluster);
  const out: KubeObject[] = [];
  for (const task of (await store.list("Task", { namespace })).items) {
    if (!task.metadata.deletionTimestamp) out.push(withArtifactUrls(task, options.artifactDir));
  }
  out.push(...(await store.list("DomainPeer", { namespace })).items);
  // Addons reach the agent rendered, as the AddonReleases the Addon controller wrote for this
  // cluster; one being deleted is left out, so the agent uninstalls it.
  for (const release of (await store.list("AddonRelease", { namespace })).items) {
    if (!release.metadata.deletionTimestamp) out.push(release);
  }
  // Bundles the same way: the BundleReleases the Bundle controller wrote (docs/bundles.md).
  for (const release of (await store.list("BundleRelease", { namespace })).items) {
    if (!release.metadata.deletionTimestamp) out.push(release);
  }
  for (const node of (await store.list("Node", { namespace })).items) {
    if (node.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY_GIT) out.push(nodeOverlay(node));
  }
  // Status is the hub's record of what agents reported; agents act on metadata and spec only.
  return out.map(withoutStatus).sort((a, b) => kindKeyOf(a).localeCompare(kindKeyOf(b)));
}

function withoutStatus(object: KubeObject): KubeObject {
  const { status: _status, ...rest } = object;
  return rest as KubeObject;
}

/** Only what git says about a node: the overlay's labels and annotations, and the cordon. */
function nodeOverlay(node: KubeObject): KubeObject {
  const keys = overlayKeys(node);
  return {
    apiVersion: node.apiVersion,
    kind: "Node",
    metadata: {
      name: node.metadata.name,
      namespace: node.metadata.namespace,
      labels: pickKeys(
        node.metadata.labels,
        keys.labels.filter((k) => k !== MANAGED_BY_LABEL),
      ),
      annotations: pickKeys(node.metadata.annotations, keys.annotations),
    },
    spec: { unschedulable: (node.spec as { unschedulable?: boolean } | undefined)?.unschedulable ?? false },
  };
}

/** Raw artifacts named by a repository path are served from the hub's artifact store. */
function withArtifactUrls(task: KubeObject, artifactDir: string): KubeObject {
  const raw = (task.spec as { raw?: { artifact?: { url: string; sha256: string } } } | undefined)?.raw;
  const artifact = raw?.artifact;
  if (!artifact || !isRepositoryPath(artifact.url)) return task;
  const spec = task.spec as Record<string, unknown>;
  return {
    ...task,
    spec: {
      ...spec,
      raw: {
        ...raw,
        artifact: { ...artifact, url: artifactUrl(artifactDir, artifact.sha256, artifact.url) },
      },
    },
  };
}

export function hasCleanupFinalizer(task: KubeObject): boolean {
  return (task.metadata.finalizers ?? []).includes(AGENT_CLEANUP_FINALIZER);
}
