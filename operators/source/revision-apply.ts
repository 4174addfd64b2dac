// A revision's one way into the store: validated whole, its repository artifacts copied into the
// hub's content-addressed store, then applied in one transaction; or refused whole, the store
// untouched.
import { realpath } from "node:fs/promises";
import path from "node:path";
import { type AddonCatalog, compareVersions, type SealCheck } from "../api/index.ts";
import type { Logger } from "../lib/logger.ts";
import type { Store } from "../lib/store/index.ts";
import { storeArtifacts } from "./artifact-store.ts";
import type { ApplyRevisionInput, ApplyRevisionResult } from "./git-watcher.ts";
import { RevisionMemo } from "./revision-memo.ts";
import { applySnapshot, applySnapshotChanges, type SnapshotChanges } from "./snapshot-apply.ts";
import { validatePaths } from "./validate-paths.ts";

export interface RevisionApplierOptions {
  store: Store;
  /** Where repository artifacts are kept for agents to fetch (`<data-dir>/artifacts`). */
  artifactDir: string;
  logger: Logger;
  /**
   * Told the catalog an accepted revision was validated with (the package's plus the
   * repository's `.rlark/addons/`), before its objects reach the store: the Addon controller
   * renders from it.
   */
  onCatalog?: (catalog: AddonCatalog) => void;
  /** The hub's check that it opens every SealedSecret value (api/validate). */
  sealCheck?: SealCheck;
}

/** An ApplyRevision for the git watcher whose result also says what changed. */
export type RevisionApplier = (
  input: ApplyRevisionInput,
) => Promise<ApplyRevisionResult & { changes?: SnapshotChanges }>;

export function createRevisionApplier(options: RevisionApplierOptions): RevisionApplier {
  // The first revision is read and applied whole; each later one costs what changed in it.
  const memo = new RevisionMemo();
  return async ({ revision, dir, path: manifestPath, blobs }) => {
    const root = path.join(dir, manifestPath);
    memo.begin();
    const identity = blobs ? await identityIn(dir, blobs) : undefined;
    // Diagnostics name files relative to the repository root, as a person sees them in git.
    const result = await validatePaths([root], {
      baseDir: dir,
      installedAddons: await installedAddons(options.store),
      ...(options.sealCheck ? { sealCheck: options.sealCheck } : {}),
      cache: memo,
      memo: memo.checks,
      ...(identity ? { identity } : {}),
    });
    if (!result.valid) {
      memo.refused();
      options.logger.warn("revision refused", { revision, errors: result.errors.length });
      return { accepted: false, errors: result.errors };
    }
    const scope = memo.changes(result.objects);
    // Every artifact's digest is checked again: a file beside the manifests may have changed alone.
    const artifactErrors = await storeArtifacts(
      scope?.artifactOwners ?? result.objects,
      root,
      options.artifactDir,
    );
    if (artifactErrors.length > 0) return { accepted: false, errors: artifactErrors };
    options.onCatalog?.(result.catalog);
    const changes = scope
      ? await applySnapshotChanges(options.store, scope.objects, scope.removed, revision, scope.unchanged)
      : await applySnapshot(options.store, result.objects, revision);
    memo.applied(scope, result.objects);
    options.logger.info("revision applied", { revision, ...changes });
    return { accepted: true, errors: [], changes };
  };
}

/**
 * A file's identity by its real path (the loader reads files through links resolved inside the
 * tree): the blob id git lists for it in the revision checked out at `dir`. A file outside the
 * listing (a link's own blob, an untracked file) has none and is read and hashed.
 */
async function identityIn(
  dir: string,
  blobs: ReadonlyMap<string, string>,
): Promise<(absolute: string) => string | undefined> {
  const real = await realpath(dir);
  return (absolute) => {
    const relative = path.relative(real, absolute);
    if (relative.startsWith("..") || path.isAbsolute(relative)) return undefined;
    const id = blobs.get(relative.split(path.sep).join("/"));
    return id === undefined ? undefined : `git:${id}`;
  };
}

/**
 * The version each Addon runs now, from its status: the highest of its clusters' (a downgrade is
 * judged against what is really installed, not what git said last).
 */
export async function installedAddons(store: Store): Promise<Map<string, string>> {
  const installed = new Map<string, string>();
  for (const addon of (await store.list("Addon")).items) {
    const status = addon.status as { version?: string; clusters?: { version?: string }[] } | undefined;
    const versions = [status?.version, ...(status?.clusters ?? []).map((c) => c.version)].filter(
      (v): v is string => typeof v === "string" && v !== "",
    );
    const highest = versions.sort(compareVersions).at(-1);
    if (highest) installed.set(`${addon.metadata.namespace ?? ""}/${addon.metadata.name}`, highest);
  }
  return installed;
}
