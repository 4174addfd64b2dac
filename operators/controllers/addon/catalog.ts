import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import { parse } from "yaml";

/** One installable version of a catalog component. */
export interface CatalogEntry {
  name: string;
  version: string;
  description: string;
  /** JSON Schema the Addon's spec.values must satisfy. */
  valuesSchema: Record<string, unknown>;
  /** Folder holding addon.yaml, values.schema.json and the manifests to render. */
  dir: string;
}

export interface ValuesViolation {
  /** JSON pointer inside spec.values. */
  path: string;
  message: string;
}

export interface AddonCatalog {
  entries(): CatalogEntry[];
  get(name: string, version: string): CatalogEntry | undefined;
  versions(name: string): string[];
  checkValues(entry: CatalogEntry, values: unknown): ValuesViolation[];
}

const DEFAULT_CATALOG_DIR = fileURLToPath(new URL("../../../fleet/addons/", import.meta.url));

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
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  const compiled = new Map<CatalogEntry, ValidateFunction>();
  return {
    entries: () => entries,
    get: (name, version) => entries.find((e) => e.name === name && e.version === version),
    versions: (name) => entries.filter((e) => e.name === name).map((e) => e.version),
    checkValues(entry, values) {
      let validate = compiled.get(entry);
      if (!validate) {
        validate = ajv.compile(entry.valuesSchema);
        compiled.set(entry, validate);
      }
      if (validate(values ?? {})) return [];
      const seen = new Set<string>();
      return (validate.errors ?? []).filter(isLeafError).flatMap((e) => {
        const at =
          e.instancePath +
          (e.keyword === "additionalProperties" ? `/${String(e.params.additionalProperty)}` : "");
        // oneOf alternatives fail together; the first says enough.
        if (seen.has(at)) return [];
        seen.add(at);
        return [{ path: at, message: describe(e) }];
      });
    },
  };
}

function isLeafError(e: ErrorObject): boolean {
  return e.keyword !== "oneOf" && e.keyword !== "anyOf" && e.keyword !== "if";
}

function describe(e: ErrorObject): string {
  if (e.keyword === "additionalProperties") return `unknown value "${String(e.params.additionalProperty)}"`;
  if (e.keyword === "type") return `must be ${String(e.params.type)}`;
  return e.message ?? e.keyword;
}
