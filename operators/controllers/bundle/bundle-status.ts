// A Bundle's status from its releases' (one per cluster), pure: each cluster's phase, revision,
// message and objects' health, and the least advanced phase overall. The objects are copied so the
// status branch's status/bundle/<name>.yaml holds the whole picture in one document.
import type { BundleRelease, BundleStatus } from "../../api/index.ts";
import { clusterOf } from "../../api/index.ts";

type Phase = NonNullable<BundleStatus["phase"]>;

/** Least advanced first: the overall phase is the first of these any cluster is in. */
const ORDER: readonly Phase[] = ["Failed", "Drifted", "Pending", "Progressing", "Removing", "Ready"];

export function bundleStatus(generation: number, releases: readonly BundleRelease[]): BundleStatus {
  const clusters = releases
    .map((r) => ({
      cluster: clusterOf(r.metadata.namespace) ?? r.metadata.namespace ?? "",
      // A status about an older spec says nothing about this one yet.
      phase:
        r.status?.observedGeneration === r.metadata.generation ? (r.status?.phase ?? "Pending") : "Pending",
      ...(r.status?.revision ? { revision: r.status.revision } : {}),
      ...(r.status?.message ? { message: r.status.message } : {}),
      ...(r.status?.objects?.length ? { objects: r.status.objects } : {}),
    }))
    .sort((a, b) => (a.cluster < b.cluster ? -1 : a.cluster > b.cluster ? 1 : 0));
  if (clusters.length === 0) {
    return {
      phase: "Pending",
      message: "no Cluster matches the clusterSelector",
      observedGeneration: generation,
      clusters: [],
    };
  }
  const phase = ORDER.find((p) => clusters.some((c) => c.phase === p)) ?? "Pending";
  const message = clusters
    .filter((c) => c.phase !== "Ready")
    .map((c) => `${c.cluster}: ${c.phase}${c.message ? ` (${c.message})` : ""}`)
    .join("; ");
  return { phase, ...(message ? { message } : {}), observedGeneration: generation, clusters };
}
