// An Addon's status from its releases' (one per cluster), pure. A namespaced Addon has one
// cluster and shows its phase directly; a cluster-wide one lists each cluster and shows the
// least advanced phase overall.
import type { AddonRelease, AddonStatus } from "../../api/index.ts";
import { clusterOf } from "../../api/index.ts";

type Phase = NonNullable<AddonStatus["phase"]>;

/** Least advanced first: the overall phase is the first of these any cluster is in. */
const ORDER: readonly Phase[] = ["Failed", "Pending", "Installing", "Upgrading", "Uninstalling", "Ready"];

export function addonStatus(input: {
  generation: number;
  clusterWide: boolean;
  releases: readonly AddonRelease[];
  previous: AddonStatus | undefined;
  /** Why nothing could be rendered (a catalog problem), if so. */
  error?: string;
  /** Why nothing is rendered yet (no catalog since the hub started), if so. */
  waiting?: string;
  /** Said first in the message: the Addon names its catalog entry by an alias. */
  note?: string;
}): AddonStatus {
  const status = phaseStatus(input);
  if (!input.note) return status;
  return { ...status, message: status.message ? `${input.note}; ${status.message}` : input.note };
}

function phaseStatus(input: Omit<Parameters<typeof addonStatus>[0], "note">): AddonStatus {
  const { releases, previous } = input;
  if (input.error) {
    return {
      ...keepVersion(previous),
      phase: "Failed",
      message: input.error,
      observedGeneration: input.generation,
    };
  }
  if (input.waiting && releases.length === 0) {
    return {
      ...keepVersion(previous),
      phase: "Pending",
      message: input.waiting,
      observedGeneration: input.generation,
    };
  }
  const clusters = releases
    .map((r) => ({
      cluster: clusterOf(r.metadata.namespace) ?? r.metadata.namespace ?? "",
      phase: current(r) ? (r.status?.phase ?? "Pending") : "Pending",
      ...(r.status?.version ? { version: r.status.version } : {}),
      ...(r.status?.message ? { message: r.status.message } : {}),
    }))
    .sort((a, b) => (a.cluster < b.cluster ? -1 : a.cluster > b.cluster ? 1 : 0));
  if (clusters.length === 0) {
    return {
      ...keepVersion(previous),
      phase: "Pending",
      message: input.clusterWide ? "no Cluster matches the clusterSelector" : "no release yet",
      observedGeneration: input.generation,
      ...(input.clusterWide ? { clusters: [] } : {}),
    };
  }
  const phase = ORDER.find((p) => clusters.some((c) => c.phase === p)) ?? "Pending";
  const notReady = clusters.filter((c) => c.phase !== "Ready");
  const message = input.clusterWide
    ? notReady.map((c) => `${c.cluster}: ${c.phase}${c.message ? ` (${c.message})` : ""}`).join("; ")
    : (clusters[0]?.message ?? "");
  const versions = new Set(clusters.map((c) => c.version));
  // The version installed everywhere, once Ready; until then the one before (downgrade checks read it).
  const version = phase === "Ready" && versions.size === 1 ? clusters[0]?.version : previous?.version;
  return {
    phase,
    ...(version ? { version } : {}),
    ...(message ? { message } : {}),
    observedGeneration: input.generation,
    ...(input.clusterWide ? { clusters } : {}),
  };
}

/** The agent has reported on this release's latest spec. */
function current(release: AddonRelease): boolean {
  return release.status?.observedGeneration === release.metadata.generation;
}

function keepVersion(previous: AddonStatus | undefined): Pick<AddonStatus, "version"> {
  return previous?.version ? { version: previous.version } : {};
}
