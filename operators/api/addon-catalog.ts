// What the validator knows about the addon catalog: its entries and their values schemas. Pure:
// the caller reads the catalog (source/addon-catalog.ts) and passes it in.
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";

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

/** A catalog over `entries`; each values schema is compiled the first time it is used. */
export function addonCatalog(entries: CatalogEntry[]): AddonCatalog {
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
