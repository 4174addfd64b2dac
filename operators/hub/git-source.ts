// The hub's source: the git watcher whose every new revision is validated whole and applied to
// the store in one transaction, or refused whole.
import path from "node:path";
import type { CountingApplyRevision, SyncStatusReporter } from "../feedback/sync-status.ts";
import type { Logger } from "../lib/logger.ts";
import type { Store } from "../lib/store/index.ts";
import type { ApplyRevision } from "../source/index.ts";
import {
  createGitRepository,
  createGitWatcher,
  type GitCredentials,
  type GitRepository,
  type GitWatcher,
  validatePaths,
} from "../source/index.ts";
import { applySnapshot } from "../source/snapshot-apply.ts";
import { storeArtifacts } from "./agent-sync/artifacts.ts";

export interface HubSourceOptions {
  store: Store;
  dataDir: string;
  repo: string;
  branch: string;
  /** Folder of the repository that holds the manifests. */
  path: string;
  intervalMs: number;
  credentials?: GitCredentials;
  /** Reports `rlark/sync` commit statuses for every revision (feedback to the code host). */
  syncStatus?: SyncStatusReporter;
  logger: Logger;
}

export interface HubSource {
  repository: GitRepository;
  watcher: GitWatcher;
}

function withSyncStatus(
  reporter: SyncStatusReporter | undefined,
  apply: CountingApplyRevision,
): ApplyRevision {
  return reporter ? reporter.wrap(apply) : apply;
}

export function createHubSource(options: HubSourceOptions): HubSource {
  const repository = createGitRepository({
    url: options.repo,
    branch: options.branch,
    dataDir: options.dataDir,
    credentials: options.credentials,
  });
  const watcher = createGitWatcher({
    repository,
    dataDir: options.dataDir,
    path: options.path,
    intervalMs: options.intervalMs,
    applyRevision: withSyncStatus(options.syncStatus, async ({ revision, dir, path: manifestPath }) => {
      const root = path.join(dir, manifestPath);
      // Diagnostics name files relative to the repository root, as a person sees them in git.
      const result = await validatePaths([root], { baseDir: dir });
      if (!result.valid) {
        options.logger.warn("revision refused", { revision, errors: result.errors.length });
        return { accepted: false, errors: result.errors };
      }
      const artifactErrors = await storeArtifacts(
        result.objects,
        root,
        path.join(options.dataDir, "artifacts"),
      );
      if (artifactErrors.length > 0) return { accepted: false, errors: artifactErrors };
      const changes = await applySnapshot(options.store, result.objects, revision);
      options.logger.info("revision applied", { revision, ...changes });
      return { accepted: true, errors: [], changes };
    }),
  });
  return { repository, watcher };
}
