import { compareVersions } from "../../addon-catalog.ts";
import { AddonRenderError, DEFAULT_ADDON_NAMESPACE, renderAddon } from "../../addon-render.ts";
import { clusterOf } from "../../well-known.ts";
import {
  type ManifestObject,
  type ObjectRule,
  objectAt,
  type RuleContext,
  stringAt,
  type WholeRule,
} from "../rule-context.ts";
import { suggest } from "./job-specs.ts";

/** Node overlays and per-cluster Addons live in `agent-<cluster>`: that cluster must be declared. */
export const clusterReferenceRule: ObjectRule = {
  kinds: ["Node", "Addon"],
  names: ["Cluster"],
  check(object, ctx) {
    if (object.kind === "Node") {
      checkClusterNamespace(ctx, object);
      return;
    }
    const addon = object;
    const hasSelector = objectAt(objectAt(addon.object, "spec"), "clusterSelector") !== undefined;
    if (!hasSelector && addon.namespace === undefined) {
      ctx.report(
        addon,
        "/metadata",
        "cross/addon-target",
        "an Addon needs a target: metadata.namespace agent-<cluster>, or spec.clusterSelector",
      );
      return;
    }
    if (!hasSelector) checkClusterNamespace(ctx, addon);
  },
};

function checkClusterNamespace(ctx: RuleContext, object: ManifestObject): void {
  const cluster = clusterOf(object.namespace);
  if (cluster === undefined) {
    ctx.report(
      object,
      "/metadata/namespace",
      "cross/cluster-namespace",
      `must be agent-<cluster> (got ${object.namespace === undefined ? "no namespace" : `"${object.namespace}"`})`,
    );
    return;
  }
  const clusters = ctx.names("Cluster");
  if (!clusters.has(cluster)) {
    ctx.report(
      object,
      "/metadata/namespace",
      "cross/cluster-exists",
      `Cluster "${cluster}" is not defined in the repository${suggest(cluster, clusters)}`,
    );
  }
}

/** The Addon names a catalog entry and version, and its values fit that entry's values schema. */
export const addonCatalogRules: WholeRule = {
  reads: ["Addon"],
  // The catalog is read again with each revision's .rlark/addons/, and installed versions change.
  uses: (ctx) => [ctx.catalog, ctx.installedAddons],
  run: (ctx) => {
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
      const violations = ctx.catalog.checkValues(entry, spec?.values);
      for (const violation of violations) {
        ctx.report(addon, `/spec/values${violation.path}`, "cross/addon-values", violation.message);
      }
      const installed = ctx.installedAddons.get(`${addon.namespace ?? ""}/${addon.name}`);
      if (installed !== undefined && compareVersions(version, installed) < 0 && !entry.allowDowngrade) {
        ctx.report(
          addon,
          "/spec/version",
          "cross/addon-downgrade",
          `${name} runs ${installed}; moving down to ${version} is refused (its addon.yaml does not set allowDowngrade: true)`,
        );
      }
      if (violations.length > 0) continue;
      // The values fit the schema; they must also render (a manifest may reference a value the
      // schema leaves optional and without a default).
      try {
        renderAddon(entry, ctx.catalog.withDefaults(entry, spec?.values), {
          name: addon.name,
          version,
          namespace: stringAt(spec, "namespace") ?? DEFAULT_ADDON_NAMESPACE,
        });
      } catch (error) {
        if (!(error instanceof AddonRenderError)) throw error;
        ctx.report(addon, "/spec/values", "cross/addon-render", `renders no objects: ${error.message}`);
      }
    }
  },
};
