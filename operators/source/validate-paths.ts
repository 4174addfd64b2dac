import path from "node:path";
import {
  type AddonCatalog,
  SnapshotChecker,
  type ValidateOptions,
  type ValidationResult,
} from "../api/index.ts";
import { catalogFor } from "./addon-catalog.ts";
import { type FileCache, loadManifests } from "./loader.ts";

export type ValidatePathsOptions = Omit<ValidateOptions, "catalog"> &
  Partial<Pick<ValidateOptions, "catalog">> & {
    /** Paths in diagnostics are relative to this directory. */
    baseDir: string;
    /** Parses kept from an earlier load (the hub's revisions; see LoadOptions.cache). */
    cache?: FileCache;
    /** Files' identities without reading them (LoadOptions.identity). */
    identity?: (absolute: string) => string | undefined;
  };

export type PathsValidation = ValidationResult & {
  /** The catalog the Addons were checked against: the package's plus the folders' `.rlark/addons/`. */
  catalog: AddonCatalog;
};

/**
 * Loads every manifest under `paths` and validates the whole set: what `rlark validate`, plans
 * and the git source run. Without a catalog, the package's is read with each folder's own.
 */
export async function validatePaths(
  paths: string[],
  options: ValidatePathsOptions,
): Promise<PathsValidation> {
  const loadedCatalog = options.catalog
    ? { catalog: options.catalog, diagnostics: [] }
    : catalogFor(
        paths.map((p) => path.resolve(options.baseDir, p)),
        options.baseDir,
      );
  const checker = new SnapshotChecker({ ...options, catalog: loadedCatalog.catalog });
  // Documents are checked as they are read, so a summarised snapshot never holds every full object.
  const loaded = await loadManifests(paths, {
    baseDir: options.baseDir,
    onDocument: (d) => checker.add(d),
    ...(options.cache ? { cache: options.cache } : {}),
    ...(options.identity ? { identity: options.identity } : {}),
  });
  const result = checker.finish([...loadedCatalog.diagnostics, ...loaded.diagnostics]);
  return { ...result, catalog: loadedCatalog.catalog };
}
