// The Addon controller: renders each Addon (release-spec.ts) into one AddonRelease per target
// cluster, in agent-<cluster>, which the agent sync hands to that cluster's agent; removes the
// releases of clusters no longer targeted (the agent then uninstalls); and sums the releases'
// statuses, which the agents report, into the Addon's status (addon-status.ts).
//
// A namespaced Addon targets the cluster of its namespace; a cluster-wide one every Cluster its
// clusterSelector matches, except clusters where a namespaced Addon of the same name exists
// (the more specific one wins; both would write agent-<cluster>/<name>).
import {
  ADDON_LABEL,
  type Addon,
  type AddonCatalog,
  type AddonRelease,
  type AddonReleaseSpec,
  type Cluster,
  clusterOf,
  namespaceFor,
} from "../../api/index.ts";
import type {
  Controller,
  MapToKeys,
  ReconcileContext,
  ReconcileRequest,
} from "../../lib/controller/index.ts";
import { compileLabelSelector, deepEqual, isNotFound, matches, type Store } from "../../lib/store/index.ts";
import { deleteRelease, writeRelease } from "../agent-release.ts";
import { addonStatus } from "./addon-status.ts";
import type { AddonCatalogHolder } from "./catalog-holder.ts";
import { releaseSpec } from "./release-spec.ts";

export interface AddonControllerOptions {
  catalog: AddonCatalogHolder;
  name?: string;
  workers?: number;
  resyncPeriod?: number;
}

/** The Addon's controller key: "namespace/name", or "name" when cluster-wide. */
function addonKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

function releaseKey(release: AddonRelease): string {
  return release.spec.clusterWide
    ? release.metadata.name
    : addonKey(release.metadata.namespace, release.metadata.name);
}

async function targetClusters(store: Store, addon: Addon): Promise<string[]> {
  const own = clusterOf(addon.metadata.namespace);
  if (addon.metadata.namespace) return own ? [own] : [];
  const selector = addon.spec.clusterSelector;
  if (!selector) return [];
  let compiled: ReturnType<typeof compileLabelSelector>;
  try {
    compiled = compileLabelSelector(selector);
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const cluster of (await store.list<Cluster>("Cluster")).items) {
    if (!matches(compiled, cluster.metadata.labels)) continue;
    const name = cluster.metadata.name;
    if (await store.get("Addon", namespaceFor(name), addon.metadata.name)) continue;
    out.push(name);
  }
  return out.sort();
}

async function releasesOf(
  store: Store,
  namespace: string | undefined,
  name: string,
): Promise<AddonRelease[]> {
  const { items } = await store.list<AddonRelease>("AddonRelease", {
    ...(namespace ? { namespace } : {}),
    labelSelector: { matchLabels: { [ADDON_LABEL]: name } },
  });
  return items.filter((r) => r.metadata.name === name && (r.spec.clusterWide ?? false) === !namespace);
}

export function createAddonController(options: AddonControllerOptions): Controller {
  const known = new Set<string>();
  let enqueue: ((key: string) => void) | undefined;
  // A new catalog may render unchanged Addons differently: look at every one again.
  options.catalog.onChange(() => {
    for (const key of known) enqueue?.(key);
  });

  async function reconcile(request: ReconcileRequest, context: ReconcileContext): Promise<void> {
    enqueue = (key) => context.enqueue(key);
    const { store } = context;
    const namespace = request.namespace || undefined;
    const addon = await store.get<Addon>("Addon", namespace, request.name);
    const releases = await releasesOf(store, namespace, request.name);
    if (!addon || addon.metadata.deletionTimestamp) {
      known.delete(request.key);
      for (const release of releases)
        if (!release.metadata.deletionTimestamp) await deleteRelease(store, "AddonRelease", release);
      return;
    }
    known.add(request.key);
    const generation = addon.metadata.generation ?? 0;
    const clusters = await targetClusters(store, addon);
    const byCluster = new Map(releases.map((r) => [clusterOf(r.metadata.namespace) ?? "", r]));
    for (const [cluster, release] of byCluster) {
      if (!clusters.includes(cluster) && !release.metadata.deletionTimestamp)
        await deleteRelease(store, "AddonRelease", release);
    }

    const catalog = options.catalog.current;
    let spec: AddonReleaseSpec | undefined;
    let error: string | undefined;
    if (catalog) {
      const result = releaseSpec(addon, catalog);
      if ("error" in result) error = result.error;
      else spec = result.spec;
    } else {
      // After a restart, before the first revision: what was rendered for this generation stands.
      spec = releases.find((r) => r.spec.addonGeneration === generation)?.spec;
    }
    if (spec) {
      for (const cluster of clusters) {
        const existing = byCluster.get(cluster);
        // One still being uninstalled is replaced once it is gone (its deletion queues this Addon).
        if (existing?.metadata.deletionTimestamp) continue;
        await writeRelease(store, "AddonRelease", ADDON_LABEL, cluster, request.name, spec, existing);
      }
    }

    const current = await releasesOf(store, namespace, request.name);
    const status = addonStatus({
      generation,
      clusterWide: namespace === undefined,
      // Clusters it is leaving show Uninstalling until their agent is done.
      releases: current,
      previous: addon.status,
      ...(error ? { error } : {}),
      ...(spec ? {} : { waiting: "waiting for the addon catalog (the next applied revision)" }),
      ...aliasNote(addon.spec.addonName, catalog),
    });
    if (deepEqual(addon.status ?? null, status)) return;
    try {
      await store.updateStatus({ ...addon, status });
    } catch (err) {
      // A concurrent write (the revision path) queues this Addon again anyway.
      if (!isNotFound(err)) throw err;
    }
  }

  const fromRelease: MapToKeys = (object) => [releaseKey(object as AddonRelease)];
  // A namespaced Addon hides the cluster-wide Addon of the same name in its cluster.
  const fromAddon: MapToKeys = (object) => (object.metadata.namespace ? [object.metadata.name] : []);
  const fromCluster: MapToKeys = () => [...known].filter((key) => !key.includes("/"));

  return {
    name: options.name ?? "addon",
    kind: "Addon",
    reconcile,
    watches: [
      { kind: "AddonRelease", mapToKeys: fromRelease },
      { kind: "Addon", mapToKeys: fromAddon },
      { kind: "Cluster", mapToKeys: fromCluster },
    ],
    ...(options.workers === undefined ? {} : { workers: options.workers }),
    ...(options.resyncPeriod === undefined ? {} : { resyncPeriod: options.resyncPeriod }),
  };
}

/** The status note of an Addon that names its catalog entry by an alias (seed 000's name, say). */
function aliasNote(addonName: string, catalog: AddonCatalog | undefined): { note?: string } {
  const entry = catalog?.aliasOf(addonName);
  return entry ? { note: `${addonName} is an alias of the catalog entry ${entry}` } : {};
}
