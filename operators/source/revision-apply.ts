// A revision's one way into the store: validated whole, its repository artifacts copied into the
// hub's content-addressed store, then applied in one transaction; or refused whole, the store
// untouched.
import path from "node:path";
import type { Logger } from "../lib/logger.ts";
import type { Store } from "../lib/store/index.ts";
import { storeArtifacts } from "./artifact-store.ts";
import type { ApplyRevisionInput, ApplyRevisionResult } from "./git-watcher.ts";
import { applySnapshot, type SnapshotChanges } from "./snapshot-apply.ts";
import { validatePaths } from "./validate-paths.ts";

export interface RevisionApplierOptions {
  store: Store;
  /** Where repository artifacts are kept for agents to fetch (`<data-dir>/artifacts`). */
  artifactDir: string;
  logger: Logger;
}

/** An ApplyRevision for the git watcher whose result also says what changed. */
export type RevisionApplier = (
  input: ApplyRevisionInput,
) => Promise<ApplyRevisionResult & { changes?: SnapshotChanges }>;

export function createRevisionApplier(options: RevisionApplierOptions): RevisionApplier {
  return async ({ revision, dir, path: manifestPath }) => {
    const root = path.join(dir, manifestPath);
    // Diagnostics name files relative to the repository root, as a person sees them in git.
    const result = await validatePaths([root], { baseDir: dir });
    if (!result.valid) {
      options.logger.warn("revision refused", { revision, errors: result.errors.length });
      return { accepted: false, errors: result.errors };
    }
    const artifactErrors = await storeArtifacts(result.objects, root, options.artifactDir);
    if (artifactErrors.length > 0) return { accepted: false, errors: artifactErrors };
    const changes = await applySnapshot(options.store, result.objects, revision);
    options.logger.info("revision applied", { revision, ...changes });
    return { accepted: true, errors: [], changes };
  };
}
