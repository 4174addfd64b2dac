// What one Addon renders to, the same for every cluster it targets: the AddonRelease spec.
import {
  type Addon,
  type AddonCatalog,
  type AddonReleaseSpec,
  AddonRenderError,
  DEFAULT_ADDON_NAMESPACE,
  renderAddon,
} from "../../api/index.ts";

export type ReleaseSpecResult = { spec: AddonReleaseSpec } | { error: string };

/** Renders `addon` with `catalog`; a problem (the revision path refuses them first) is an error message. */
export function releaseSpec(addon: Addon, catalog: AddonCatalog): ReleaseSpecResult {
  const { addonName, version, values } = addon.spec;
  const entry = catalog.get(addonName, version);
  if (!entry) return { error: `${addonName} ${version} is not in the addon catalog` };
  const violations = catalog.checkValues(entry, values);
  if (violations[0]) return { error: `values${violations[0].path}: ${violations[0].message}` };
  const namespace = addon.spec.namespace ?? DEFAULT_ADDON_NAMESPACE;
  try {
    const objects = renderAddon(entry, catalog.withDefaults(entry, values), {
      name: addon.metadata.name,
      version,
      namespace,
    });
    return {
      spec: {
        addonName,
        version,
        namespace,
        clusterWide: addon.metadata.namespace === undefined,
        addonGeneration: addon.metadata.generation ?? 0,
        ...(entry.minKubernetesVersion ? { minKubernetesVersion: entry.minKubernetesVersion } : {}),
        objects: objects as unknown as AddonReleaseSpec["objects"],
      },
    };
  } catch (error) {
    if (error instanceof AddonRenderError) return { error: error.message };
    throw error;
  }
}
