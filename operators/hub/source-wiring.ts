// The hub's git source: a mirror of the repository and a watcher that hands every new revision to
// source/'s one revision path (validate, store artifacts, apply or refuse whole).
import path from "node:path";
import type { AddonCatalog, SealCheck } from "../api/index.ts";
import type { SyncStatusReporter } from "../feedback/index.ts";
import type { Logger } from "../lib/logger.ts";
import type { Registry } from "../lib/metrics/index.ts";
import type { Store } from "../lib/store/index.ts";
import {
  createGitRepository,
  createGitWatcher,
  createRevisionApplier,
  type GitCredentials,
  type GitRepository,
  type GitWatcher,
  registerGitSourceMetrics,
} from "../source/index.ts";

export interface HubSourceOptions {
  store: Store;
  dataDir: string;
  repo: string;
  branch: string;
  /** Folder of the repository that holds the manifests. */
  path: string;
  intervalMs: number;
  /** How long a git command talking to the remote may show no progress; default 60 s. */
  gitTimeoutMs?: number;
  credentials?: GitCredentials;
  /** Reports `rlark/sync` commit statuses for every revision (feedback to the code host). */
  syncStatus?: SyncStatusReporter;
  registry: Registry;
  logger: Logger;
  /** Told the addon catalog each accepted revision was validated with. */
  onCatalog?: (catalog: AddonCatalog) => void;
  /** Every SealedSecret value must open with the hub's keys. */
  sealCheck?: SealCheck;
}

export interface HubSource {
  repository: GitRepository;
  watcher: GitWatcher;
}

export function createHubSource(options: HubSourceOptions): HubSource {
  const repository = createGitRepository({
    url: options.repo,
    branch: options.branch,
    dataDir: options.dataDir,
    credentials: options.credentials,
    ...(options.gitTimeoutMs ? { timeoutMs: options.gitTimeoutMs } : {}),
  });
  const apply = createRevisionApplier({
    store: options.store,
    artifactDir: path.join(options.dataDir, "artifacts"),
    logger: options.logger,
    ...(options.onCatalog ? { onCatalog: options.onCatalog } : {}),
    ...(options.sealCheck ? { sealCheck: options.sealCheck } : {}),
  });
  const watcher = createGitWatcher({
    repository,
    dataDir: options.dataDir,
    path: options.path,
    intervalMs: options.intervalMs,
    // A failed fetch is logged with the remote (credentials scrubbed) and retried with backoff.
    logger: options.logger,
    applyRevision: options.syncStatus ? options.syncStatus.wrap(apply) : apply,
  });
  registerGitSourceMetrics(options.registry, watcher);
  return { repository, watcher };
}
