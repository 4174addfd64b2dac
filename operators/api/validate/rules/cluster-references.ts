import { clusterOf } from "../../well-known.ts";
import { type CrossRule, type ManifestObject, objectAt, stringAt } from "../rule-context.ts";
import { suggest } from "./job-specs.ts";

/** Node overlays and per-cluster Addons live in `agent-<cluster>`: that cluster must be declared. */
export const clusterReferenceRules: CrossRule = (ctx) => {
  const clusters = ctx.names("Cluster");
  const check = (object: ManifestObject, required: boolean) => {
    const cluster = clusterOf(object.namespace);
    if (cluster === undefined) {
      if (required) {
        ctx.report(
          object,
          "/metadata/namespace",
          "cross/cluster-namespace",
          `must be agent-<cluster> (got ${object.namespace === undefined ? "no namespace" : `"${object.namespace}"`})`,
        );
      }
      return;
    }
    if (!clusters.has(cluster)) {
      ctx.report(
        object,
        "/metadata/namespace",
        "cross/cluster-exists",
        `Cluster "${cluster}" is not defined in the repository${suggest(cluster, clusters)}`,
      );
    }
  };
  for (const node of ctx.ofKind("Node")) check(node, true);
  for (const addon of ctx.ofKind("Addon")) {
    const hasSelector = objectAt(objectAt(addon.object, "spec"), "clusterSelector") !== undefined;
    if (!hasSelector && addon.namespace === undefined) {
      ctx.report(
        addon,
        "/metadata",
        "cross/addon-target",
        "an Addon needs a target: metadata.namespace agent-<cluster>, or spec.clusterSelector",
      );
      continue;
    }
    if (!hasSelector) check(addon, true);
  }
};

/** The Addon names a catalog entry and version, and its values fit that entry's values schema. */
export const addonCatalogRules: CrossRule = (ctx) => {
  for (const addon of ctx.ofKind("Addon")) {
    const spec = objectAt(addon.object, "spec");
    const name = stringAt(spec, "addonName");
    const version = stringAt(spec, "version");
    if (name === undefined || version === undefined) continue;
    const versions = ctx.catalog.versions(name);
    if (versions.length === 0) {
      const known = ctx.catalog.entries().map((e) => e.name);
      ctx.report(
        addon,
        "/spec/addonName",
        "cross/addon-catalog",
        `"${name}" is not in the addon catalog${suggest(name, known)}; available: ${[...new Set(known)].join(", ")}`,
      );
      continue;
    }
    const entry = ctx.catalog.get(name, version);
    if (!entry) {
      ctx.report(
        addon,
        "/spec/version",
        "cross/addon-catalog",
        `${name} has no version ${version} in the catalog; available: ${versions.join(", ")}`,
      );
      continue;
    }
    for (const violation of ctx.catalog.checkValues(entry, spec?.values)) {
      ctx.report(addon, `/spec/values${violation.path}`, "cross/addon-values", violation.message);
    }
  }
};
