// Reads addon catalogs: the one that ships with the package (fleet/addons/) and the repository's
// own (`.rlark/addons/` under the manifest folder). Each entry is checked as it is read: addon.yaml's
// fields, the values schema, and that its manifests render with the defaults; problems become
// diagnostics naming the file and line, like any manifest's.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv2020 } from "ajv/dist/2020.js";
import { parseDocument } from "yaml";
import {
  type AddonCatalog,
  AddonRenderError,
  addonCatalog,
  type CatalogEntry,
  DEFAULT_ADDON_NAMESPACE,
  type Diagnostic,
  renderAddon,
} from "../api/index.ts";

export const PACKAGE_CATALOG_DIR = fileURLToPath(new URL("../../fleet/addons/", import.meta.url));
/** The repository's own catalog, relative to the manifest folder; the manifest loader skips `.rlark`. */
export const REPOSITORY_CATALOG_DIR = path.join(".rlark", "addons");

/** Largest addon.yaml, values schema or manifest file read (bounded like manifests). */
const MAX_FILE_BYTES = 1 << 20;
const MINOR_VERSION = /^[0-9]+\.[0-9]+$/;
const ALIAS = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const SEMVER = /^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;

export interface LoadedCatalog {
  catalog: AddonCatalog;
  diagnostics: Diagnostic[];
}

/**
 * Reads the catalog folders in order; a later folder may not redefine an entry of an earlier one
 * (the package's entries cannot be replaced by a repository). `baseDir` makes paths in entries
 * and diagnostics relative, as a person sees them.
 */
export function readAddonCatalogs(dirs: readonly string[], baseDir = process.cwd()): LoadedCatalog {
  const entries: CatalogEntry[] = [];
  const diagnostics: Diagnostic[] = [];
  const display = (file: string) => path.relative(baseDir, file) || file;
  // One instance checks every values schema against the meta-schema, compiled once for all.
  const schemaChecker = new Ajv2020({ strict: false });
  const problem = (file: string, line: number, rule: string, message: string, at = "") =>
    diagnostics.push({ file, line, column: line ? 1 : 0, kind: "", name: "", path: at, rule, message });
  for (const dir of dirs) {
    if (!existsSync(dir)) continue;
    for (const name of listDirs(dir)) {
      for (const version of listDirs(path.join(dir, name))) {
        const entryDir = path.join(dir, name, version);
        const entry = readEntryOnce(dir, entryDir, name, version, display, problem, schemaChecker);
        if (!entry) continue;
        const taken = entries.find(
          (e) =>
            (e.name !== name && (e.aliases ?? []).some((a) => a === name || entry.aliases?.includes(a))) ||
            (entry.aliases ?? []).includes(e.name),
        );
        if (taken) {
          problem(
            display(path.join(entryDir, "addon.yaml")),
            0,
            "catalog/duplicate",
            `${name} ${version}: a name or alias is already ${taken.name}'s`,
          );
          continue;
        }
        if (entries.some((e) => e.name === name && e.version === version)) {
          problem(
            display(path.join(entryDir, "addon.yaml")),
            0,
            "catalog/duplicate",
            `${name} ${version} is already in the catalog`,
          );
          continue;
        }
        entries.push(entry);
      }
    }
  }
  return { catalog: addonCatalog(entries), diagnostics };
}

/** The catalog that ships with the package. */
export function loadAddonCatalog(dir = PACKAGE_CATALOG_DIR): AddonCatalog {
  return readAddonCatalogs([dir]).catalog;
}

/** The package's catalog plus each manifest folder's `.rlark/addons/`. */
export function catalogFor(manifestRoots: readonly string[], baseDir: string): LoadedCatalog {
  const repositoryDirs = manifestRoots
    .map((root) => path.join(root, REPOSITORY_CATALOG_DIR))
    .filter((dir) => existsSync(dir) && statSync(dir).isDirectory());
  return readAddonCatalogs([PACKAGE_CATALOG_DIR, ...repositoryDirs], baseDir);
}

function listDirs(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();
}

function readBounded(file: string): string {
  if (statSync(file).size > MAX_FILE_BYTES) throw new Error(`larger than ${MAX_FILE_BYTES} bytes`);
  return readFileSync(file, "utf8");
}

/**
 * The package's own entries, read and checked once per process: they ship with it and do not
 * change, and checking one compiles its values schema and renders it (most of a revision's fixed
 * cost otherwise). Keyed by how the entry is displayed too, since its paths are relative to the
 * caller's base directory. A repository's entries are read every time.
 */
const packageEntries = new Map<string, CatalogEntry>();

function readEntryOnce(
  catalogDir: string,
  entryDir: string,
  name: string,
  version: string,
  display: (file: string) => string,
  problem: (file: string, line: number, rule: string, message: string, at?: string) => void,
  schemaChecker: Ajv2020,
): CatalogEntry | undefined {
  if (catalogDir !== PACKAGE_CATALOG_DIR)
    return readEntry(entryDir, name, version, display, problem, schemaChecker);
  const key = `${entryDir}\0${display(entryDir)}`;
  const known = packageEntries.get(key);
  if (known) return known;
  let problems = 0;
  const entry = readEntry(
    entryDir,
    name,
    version,
    display,
    (...args) => {
      problems++;
      problem(...args);
    },
    schemaChecker,
  );
  // Bounded: one entry per package entry and base-directory depth.
  if (entry && problems === 0 && packageEntries.size < 1024) packageEntries.set(key, entry);
  return entry;
}

function readEntry(
  entryDir: string,
  name: string,
  version: string,
  display: (file: string) => string,
  problem: (file: string, line: number, rule: string, message: string, at?: string) => void,
  schemaChecker: Ajv2020,
): CatalogEntry | undefined {
  const metaFile = path.join(entryDir, "addon.yaml");
  const schemaFile = path.join(entryDir, "values.schema.json");
  let meta: Record<string, unknown>;
  const lineOf = (doc: ReturnType<typeof parseDocument>, key: string, text: string) => {
    const node = doc.get(key, true) as { range?: [number] } | undefined;
    const offset = node?.range?.[0] ?? 0;
    return text.slice(0, offset).split("\n").length;
  };
  let metaLine = (_key: string) => 1;
  try {
    const text = readBounded(metaFile);
    const doc = parseDocument(text);
    if (doc.errors[0]) {
      problem(display(metaFile), doc.errors[0].linePos?.[0].line ?? 1, "catalog/yaml", doc.errors[0].message);
      return undefined;
    }
    meta = (doc.toJS() ?? {}) as Record<string, unknown>;
    metaLine = (key) => lineOf(doc, key, text);
  } catch (error) {
    problem(display(metaFile), 0, "catalog/unreadable", `cannot read addon.yaml: ${String(error)}`);
    return undefined;
  }
  let ok = true;
  const bad = (key: string, message: string) => {
    problem(display(metaFile), metaLine(key), "catalog/addon-yaml", message, `/${key}`);
    ok = false;
  };
  if (meta.name !== name) bad("name", `name must be "${name}", the entry's folder name`);
  if (meta.version !== version) bad("version", `version must be "${version}", the version folder's name`);
  if (!SEMVER.test(version)) bad("version", "the version folder must be a semantic version such as 0.1.0");
  if (typeof meta.description !== "string" || meta.description.trim() === "")
    bad("description", "description is required");
  if (
    meta.minKubernetesVersion !== undefined &&
    !(typeof meta.minKubernetesVersion === "string" && MINOR_VERSION.test(meta.minKubernetesVersion))
  )
    bad("minKubernetesVersion", 'minKubernetesVersion must be a string "major.minor" such as "1.30"');
  if (meta.allowDowngrade !== undefined && typeof meta.allowDowngrade !== "boolean")
    bad("allowDowngrade", "allowDowngrade must be true or false");
  const aliases = meta.aliases ?? [];
  if (!Array.isArray(aliases) || !aliases.every((a) => typeof a === "string" && ALIAS.test(a) && a !== name))
    bad("aliases", "aliases must be a list of other names (DNS-1123 labels) for this entry");
  for (const key of Object.keys(meta))
    if (
      !["name", "version", "description", "minKubernetesVersion", "allowDowngrade", "aliases"].includes(key)
    )
      bad(
        key,
        `unknown field "${key}"; addon.yaml has name, version, description, minKubernetesVersion, allowDowngrade, aliases`,
      );
  let valuesSchema: Record<string, unknown> = {};
  try {
    valuesSchema = JSON.parse(readBounded(schemaFile)) as Record<string, unknown>;
    // What ajv's compile says of a schema that breaks the meta-schema, without compiling that here.
    if (!schemaChecker.validateSchema(valuesSchema))
      throw new Error(`schema is invalid: ${schemaChecker.errorsText(schemaChecker.errors)}`);
    new Ajv2020({ strict: false, validateSchema: false }).compile(valuesSchema);
  } catch (error) {
    problem(
      display(schemaFile),
      0,
      "catalog/values-schema",
      `not a usable JSON Schema: ${(error as Error).message}`,
    );
    ok = false;
  }
  const manifestsDir = path.join(entryDir, "manifests");
  const manifests = existsSync(manifestsDir)
    ? readdirSync(manifestsDir)
        .filter((f) => f.endsWith(".yaml") || f.endsWith(".yml"))
        .sort()
        .flatMap((f) => {
          const file = path.join(manifestsDir, f);
          try {
            return [{ file: display(file), text: readBounded(file) }];
          } catch (error) {
            problem(display(file), 0, "catalog/unreadable", `cannot read manifest: ${String(error)}`);
            ok = false;
            return [];
          }
        })
    : [];
  if (!ok) return undefined;
  const entry: CatalogEntry = {
    name,
    version,
    description: String(meta.description),
    ...(typeof meta.minKubernetesVersion === "string"
      ? { minKubernetesVersion: meta.minKubernetesVersion }
      : {}),
    allowDowngrade: meta.allowDowngrade === true,
    ...(Array.isArray(aliases) && aliases.length > 0 ? { aliases: aliases as string[] } : {}),
    valuesSchema,
    dir: display(entryDir),
    manifests,
  };
  // The defaults alone must render: a catalog entry that cannot be installed as shipped is refused.
  const catalog = addonCatalog([entry]);
  const defaults = catalog.withDefaults(entry, {});
  if (catalog.checkValues(entry, defaults).length === 0) {
    try {
      renderAddon(entry, defaults, { name, version, namespace: DEFAULT_ADDON_NAMESPACE });
    } catch (error) {
      if (!(error instanceof AddonRenderError)) throw error;
      problem(error.file, error.line, "catalog/render", error.problem, error.path);
      return undefined;
    }
  }
  return entry;
}
