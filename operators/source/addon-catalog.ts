import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { type AddonCatalog, addonCatalog, type CatalogEntry } from "../api/index.ts";

const DEFAULT_CATALOG_DIR = fileURLToPath(new URL("../../fleet/addons/", import.meta.url));

/** Reads the catalog that ships with the package: fleet/addons/<name>/<version>/. */
export function loadAddonCatalog(dir = DEFAULT_CATALOG_DIR): AddonCatalog {
  const entries: CatalogEntry[] = [];
  for (const name of readdirSync(dir).sort()) {
    for (const version of readdirSync(path.join(dir, name)).sort()) {
      const entryDir = path.join(dir, name, version);
      const meta = parse(readFileSync(path.join(entryDir, "addon.yaml"), "utf8")) as Record<string, string>;
      const valuesSchema = JSON.parse(readFileSync(path.join(entryDir, "values.schema.json"), "utf8"));
      entries.push({ name, version, description: meta.description ?? "", valuesSchema, dir: entryDir });
    }
  }
  return addonCatalog(entries);
}
