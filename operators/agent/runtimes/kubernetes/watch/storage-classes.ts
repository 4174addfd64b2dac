// The cluster's StorageClasses as the agent reports them (Cluster status.storageClasses): what a
// Task's volumeClaimTemplate may name (seed 000 §14), and which one a claim naming none gets.
import type { V1StorageClass } from "@kubernetes/client-node";
import type { StorageClassSummary } from "../../../../lib/tunnel/index.ts";

const DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class";
/** The protocol's bound: a report with more is refused whole, so the rest are left out. */
const MAX_REPORTED = 256;

export function storageClassSummaries(classes: Iterable<V1StorageClass>): StorageClassSummary[] {
  return [...classes]
    .map((c): StorageClassSummary => {
      const isDefault = c.metadata?.annotations?.[DEFAULT_CLASS_ANNOTATION] === "true";
      return {
        name: c.metadata?.name ?? "",
        provisioner: c.provisioner,
        ...(isDefault ? { default: true } : {}),
        ...(c.reclaimPolicy ? { reclaimPolicy: c.reclaimPolicy } : {}),
        ...(c.volumeBindingMode ? { volumeBindingMode: c.volumeBindingMode } : {}),
        ...(c.allowVolumeExpansion !== undefined ? { allowVolumeExpansion: c.allowVolumeExpansion } : {}),
      };
    })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .slice(0, MAX_REPORTED);
}
