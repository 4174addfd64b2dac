// Addon installs, upgrades and removals per cluster. An Addon in `agent-<cluster>` targets that
// cluster; a cluster-scoped Addon with a clusterSelector targets every Cluster whose labels match
// (the planned Clusters, so a PR that adds a cluster shows what it will receive).

import { stringify } from "yaml";
import type { Addon, AddonCatalog, Cluster } from "../../api/index.ts";
import { clusterOf, compareVersions } from "../../api/index.ts";
import { releaseSpec } from "../../controllers/addon/index.ts";
import { compileLabelSelector, deepEqual, type KubeObject, matches } from "../../lib/store/index.ts";
import { byClusterThen } from "./order.ts";
import type { AddonAction, AddonImpact } from "./types.ts";

function targets(addon: Addon, clusters: readonly Cluster[]): string[] {
  const own = clusterOf(addon.metadata.namespace);
  if (own) return [own];
  if (!addon.spec.clusterSelector) return [];
  let selector: ReturnType<typeof compileLabelSelector>;
  try {
    selector = compileLabelSelector(addon.spec.clusterSelector);
  } catch {
    return [];
  }
  return clusters.filter((c) => matches(selector, c.metadata.labels ?? {})).map((c) => c.metadata.name);
}

/** What an Addon renders to (the same in every cluster), as the plan shows it. */
function rendered(
  addon: Addon,
  catalog: AddonCatalog | undefined,
): Pick<AddonImpact, "objects" | "manifest"> {
  if (!catalog) return { objects: [], manifest: "" };
  const result = releaseSpec(addon, catalog);
  if ("error" in result) return { objects: [], manifest: "" };
  const objects = result.spec.objects as unknown as KubeObject[];
  return {
    objects: objects.map(
      (o) => `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ""}${o.metadata.name}`,
    ),
    manifest: objects.map((o) => stringify(o)).join("---\n"),
  };
}

export function addonImpact(input: {
  planned: readonly Addon[];
  plannedClusters: readonly Cluster[];
  live: readonly KubeObject[];
  /** The catalog the revision was validated with; without it no objects are shown. */
  catalog?: AddonCatalog;
}): AddonImpact[] {
  const liveAddons = input.live.filter((o): o is Addon => o.kind === "Addon");
  const liveClusters = input.live.filter((o): o is Cluster => o.kind === "Cluster");
  const installed = new Map<string, { version: string; values: unknown }>();
  for (const addon of liveAddons) {
    for (const cluster of targets(addon, liveClusters)) {
      installed.set(`${addon.spec.addonName}\0${cluster}`, {
        version: addon.spec.version,
        values: addon.spec.values,
      });
    }
  }
  const planned = new Map<string, { version: string; values: unknown; addon: Addon }>();
  for (const addon of input.planned) {
    for (const cluster of targets(addon, input.plannedClusters)) {
      planned.set(`${addon.spec.addonName}\0${cluster}`, {
        version: addon.spec.version,
        values: addon.spec.values,
        addon,
      });
    }
  }
  const impacts: AddonImpact[] = [];
  for (const key of new Set([...installed.keys(), ...planned.keys()])) {
    const [addon = "", cluster = ""] = key.split("\0");
    const before = installed.get(key);
    const after = planned.get(key);
    let action: AddonAction | undefined;
    if (!before && after) action = "install";
    else if (before && !after) action = "uninstall";
    else if (before && after) {
      const order = compareVersions(after.version, before.version);
      if (order > 0) action = "upgrade";
      else if (order < 0) action = "downgrade";
      else if (!deepEqual(before.values ?? null, after.values ?? null)) action = "reconfigure";
    }
    if (!action) continue;
    impacts.push({
      addon,
      cluster,
      action,
      from: before?.version ?? "",
      to: after?.version ?? "",
      ...(after ? rendered(after.addon, input.catalog) : { objects: [], manifest: "" }),
    });
  }
  return impacts.sort(byClusterThen((row) => row.addon));
}
