// What the validator and the hub know about the addon catalog: its entries, their values schemas
// and manifests. Pure: the caller reads the catalog (source/addon-catalog.ts) and passes it in.
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";

/** One manifest file of a catalog entry, as text: rendered by addon-render.ts. */
export interface CatalogManifest {
  /** Path shown in errors (relative to the repository or package root). */
  file: string;
  text: string;
}

/** One installable version of a catalog component (docs/addons.md, contract A). */
export interface CatalogEntry {
  name: string;
  version: string;
  description: string;
  /** "major.minor": the cluster's API server must be at least this version. */
  minKubernetesVersion?: string;
  /** May an Addon move from a higher version to this one. */
  allowDowngrade: boolean;
  /** Other names an Addon may give this entry (an older name, the seeds'): they render the same. */
  aliases?: readonly string[];
  /** JSON Schema the Addon's spec.values must satisfy; its "default" keywords give defaults. */
  valuesSchema: Record<string, unknown>;
  /** Folder holding addon.yaml, values.schema.json and manifests/ (shown in errors). */
  dir: string;
  /** manifests/*.yaml in file-name order. */
  manifests: CatalogManifest[];
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
  /** The entry's own name when `name` is one of its aliases; undefined for an entry's own name. */
  aliasOf(name: string): string | undefined;
  checkValues(entry: CatalogEntry, values: unknown): ValuesViolation[];
  /** `values` with the values schema's defaults filled in (a copy; values must pass checkValues). */
  withDefaults(entry: CatalogEntry, values: unknown): Record<string, unknown>;
}

/**
 * A catalog over `entries`; each values schema is compiled the first time it is used. The schemas
 * were checked against the JSON Schema meta-schema when the catalog was read
 * (source/addon-catalog.ts), so compiling skips that check: it would compile the meta-schema
 * again in each instance, the larger part of the start-up cost of `rlark validate`.
 */
export function addonCatalog(entries: CatalogEntry[]): AddonCatalog {
  const ajv = new Ajv2020({ allErrors: true, strict: false, validateSchema: false });
  // A second instance fills in defaults: checking must not change what the user wrote.
  const defaulting = new Ajv2020({ strict: false, useDefaults: true, validateSchema: false });
  const compiled = new Map<CatalogEntry, ValidateFunction>();
  const compiledDefaults = new Map<CatalogEntry, ValidateFunction>();
  const named = (e: CatalogEntry, name: string) => e.name === name || (e.aliases ?? []).includes(name);
  return {
    entries: () => entries,
    get: (name, version) => entries.find((e) => named(e, name) && e.version === version),
    versions: (name) => entries.filter((e) => named(e, name)).map((e) => e.version),
    aliasOf: (name) =>
      entries.some((e) => e.name === name) ? undefined : entries.find((e) => named(e, name))?.name,
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
    withDefaults(entry, values) {
      let fill = compiledDefaults.get(entry);
      if (!fill) {
        fill = defaulting.compile(entry.valuesSchema);
        compiledDefaults.set(entry, fill);
      }
      const copy = structuredClone((values ?? {}) as Record<string, unknown>);
      fill(copy);
      return copy;
    },
  };
}

/** Compares two versions ("1.2.3", "1.30", "v1.34.4+k3s1"): numeric parts by number. */
export function compareVersions(a: string, b: string): number {
  const parts = (v: string) =>
    v
      .replace(/^v/, "")
      .split(/[.+-]/)
      .map((p) => (/^\d+$/.test(p) ? Number(p) : p));
  const x = parts(a);
  const y = parts(b);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const p = x[i] ?? 0;
    const q = y[i] ?? 0;
    if (p === q) continue;
    if (typeof p === "number" && typeof q === "number") return p - q;
    return String(p) < String(q) ? -1 : 1;
  }
  return 0;
}

function isLeafError(e: ErrorObject): boolean {
  return e.keyword !== "oneOf" && e.keyword !== "anyOf" && e.keyword !== "if";
}

function describe(e: ErrorObject): string {
  if (e.keyword === "additionalProperties") return `unknown value "${String(e.params.additionalProperty)}"`;
  if (e.keyword === "type") return `must be ${String(e.params.type)}`;
  return e.message ?? e.keyword;
}
