// The Addon controller (seed 000 §16, docs/addons.md): Addon → one AddonRelease per target
// cluster with the rendered objects; the releases' statuses, reported by agents, → Addon status.
//
//   const catalog = new AddonCatalogHolder();   // set by the revision path
//   manager.add(createAddonController({ catalog }));

export { AddonCatalogHolder } from "./catalog-holder.ts";
export { createAddonController } from "./controller.ts";
export { releaseSpec } from "./release-spec.ts";
