// The Bundle controller (docs/bundles.md): writes one BundleRelease per Cluster the Bundle's
// clusterSelector matches, in agent-<cluster>, holding the objects the revision path put in the
// Bundle's spec.objects; the agent sync hands it to that cluster's agent (an agentless cluster's
// runs on the hub's machine, ADR 0010). A release of a cluster no longer matched is deleted (its
// agent then prunes, when the Bundle prunes), and the releases' statuses sum into the Bundle's.
import {
  BUNDLE_LABEL,
  type Bundle,
  type BundleRelease,
  type BundleReleaseSpec,
  type Cluster,
  clusterOf,
  SOURCE_REVISION_ANNOTATION,
} from "../../api/index.ts";
import type {
  Controller,
  MapToKeys,
  ReconcileContext,
  ReconcileRequest,
} from "../../lib/controller/index.ts";
import { compileLabelSelector, deepEqual, isNotFound, matches, type Store } from "../../lib/store/index.ts";
import { deleteRelease, writeRelease } from "../agent-release.ts";
import { bundleStatus } from "./bundle-status.ts";

export interface BundleControllerOptions {
  /** False (hub --no-self-heal): agents report drift and leave it. Default true. */
  selfHeal?: boolean;
  name?: string;
  workers?: number;
  resyncPeriod?: number;
}

async function targetClusters(store: Store, bundle: Bundle): Promise<string[]> {
  let compiled: ReturnType<typeof compileLabelSelector>;
  try {
    compiled = compileLabelSelector(bundle.spec.clusterSelector);
  } catch {
    return [];
  }
  return (await store.list<Cluster>("Cluster")).items
    .filter((c) => matches(compiled, c.metadata.labels))
    .map((c) => c.metadata.name)
    .sort();
}

async function releasesOf(store: Store, name: string): Promise<BundleRelease[]> {
  const { items } = await store.list<BundleRelease>("BundleRelease", {
    labelSelector: { matchLabels: { [BUNDLE_LABEL]: name } },
  });
  return items.filter((r) => r.metadata.name === name);
}

export function createBundleController(options: BundleControllerOptions = {}): Controller {
  const known = new Set<string>();

  async function reconcile(request: ReconcileRequest, context: ReconcileContext): Promise<void> {
    const { store } = context;
    const bundle = await store.get<Bundle>("Bundle", undefined, request.name);
    const releases = await releasesOf(store, request.name);
    if (!bundle || bundle.metadata.deletionTimestamp) {
      known.delete(request.name);
      for (const release of releases)
        if (!release.metadata.deletionTimestamp) await deleteRelease(store, "BundleRelease", release);
      return;
    }
    known.add(request.name);
    const clusters = await targetClusters(store, bundle);
    const byCluster = new Map(releases.map((r) => [clusterOf(r.metadata.namespace) ?? "", r]));
    for (const [cluster, release] of byCluster) {
      if (!clusters.includes(cluster) && !release.metadata.deletionTimestamp)
        await deleteRelease(store, "BundleRelease", release);
    }
    const spec: BundleReleaseSpec = {
      namespace: bundle.spec.namespace,
      revision: bundle.metadata.annotations?.[SOURCE_REVISION_ANNOTATION] ?? "",
      prune: bundle.spec.prune ?? true,
      selfHeal: options.selfHeal ?? true,
      objects: bundle.spec.objects ?? [],
    };
    for (const cluster of clusters) {
      const existing = byCluster.get(cluster);
      // One still being removed is replaced once it is gone (its deletion queues this Bundle).
      if (existing?.metadata.deletionTimestamp) continue;
      await writeRelease(store, "BundleRelease", BUNDLE_LABEL, cluster, request.name, spec, existing);
    }
    const status = bundleStatus(bundle.metadata.generation ?? 0, await releasesOf(store, request.name));
    if (deepEqual(bundle.status ?? null, status)) return;
    try {
      await store.updateStatus({ ...bundle, status });
    } catch (err) {
      // A concurrent write (the revision path) queues this Bundle again anyway.
      if (!isNotFound(err)) throw err;
    }
  }

  const fromRelease: MapToKeys = (object) => [object.metadata.name];
  const fromCluster: MapToKeys = () => [...known];

  return {
    name: options.name ?? "bundle",
    kind: "Bundle",
    reconcile,
    watches: [
      { kind: "BundleRelease", mapToKeys: fromRelease },
      { kind: "Cluster", mapToKeys: fromCluster },
    ],
    ...(options.workers === undefined ? {} : { workers: options.workers }),
    ...(options.resyncPeriod === undefined ? {} : { resyncPeriod: options.resyncPeriod }),
  };
}
