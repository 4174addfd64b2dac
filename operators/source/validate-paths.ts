import { SnapshotChecker, type ValidateOptions, type ValidationResult } from "../api/index.ts";
import { loadAddonCatalog } from "./addon-catalog.ts";
import { loadManifests } from "./loader.ts";

export type ValidatePathsOptions = Omit<ValidateOptions, "catalog"> &
  Partial<Pick<ValidateOptions, "catalog">> & {
    /** Paths in diagnostics are relative to this directory. */
    baseDir: string;
  };

/**
 * Loads every manifest under `paths` and validates the whole set: what `rlark validate`, plans
 * and the git source run. Without a catalog, the one in the package is read for this call.
 */
export async function validatePaths(
  paths: string[],
  options: ValidatePathsOptions,
): Promise<ValidationResult> {
  const checker = new SnapshotChecker({ ...options, catalog: options.catalog ?? loadAddonCatalog() });
  // Documents are checked as they are read, so a summarised snapshot never holds every full object.
  const loaded = await loadManifests(paths, { baseDir: options.baseDir, onDocument: (d) => checker.add(d) });
  return checker.finish(loaded.diagnostics);
}
