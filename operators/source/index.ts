export {
  catalogFor,
  type LoadedCatalog,
  loadAddonCatalog,
  PACKAGE_CATALOG_DIR,
  REPOSITORY_CATALOG_DIR,
  readAddonCatalogs,
} from "./addon-catalog.ts";
export { artifactUrl, storeArtifacts } from "./artifact-store.ts";
export type { GitAuth, GitCredentials, LoadGitCredentialsOptions } from "./git-auth.ts";
export { loadGitCredentials, prepareGitAuth, repoKey, scrubUrl } from "./git-auth.ts";
export type { GitExecOptions } from "./git-exec.ts";
export { gitIn } from "./git-exec.ts";
export { registerGitSourceMetrics } from "./git-metrics.ts";
export { DEFAULT_GIT_TIMEOUT_MS, type GitRemoteOptions, GitTimeoutError, gitRemote } from "./git-remote.ts";
export type { GitRepository, GitRepositoryOptions } from "./git-repository.ts";
export { createGitRepository, GitSourceError } from "./git-repository.ts";
export type {
  ApplyRevision,
  ApplyRevisionInput,
  ApplyRevisionResult,
  GitWatcher,
  GitWatcherMetrics,
  GitWatcherOptions,
  SourceDiagnostic,
  SourceState,
  SourceStatus,
} from "./git-watcher.ts";
export { createGitWatcher, lastAppliedRevision } from "./git-watcher.ts";
export { checkManifestDir, normaliseSourcePath } from "./manifest-dir.ts";
// The manifest parser, entered by hack/fuzz.
export { parseManifestText } from "./manifest-parser.ts";
export { isRepositoryPath, verifyRepositoryArtifacts } from "./repository-artifacts.ts";
export {
  createRevisionApplier,
  type RevisionApplier,
  type RevisionApplierOptions,
} from "./revision-apply.ts";
export {
  applySnapshot,
  type OverlayKeys,
  overlayKeys,
  pickKeys,
  type SnapshotChanges,
  SOURCE_ANNOTATIONS,
} from "./snapshot-apply.ts";
export { treeBlobs } from "./tree-blobs.ts";
export { type PathsValidation, type ValidatePathsOptions, validatePaths } from "./validate-paths.ts";
export type { GitWebhookOptions, GitWebhookRequest, GitWebhookResult } from "./webhook.ts";
export { handleGitWebhook, normaliseRepoUrl } from "./webhook.ts";
export type { GitWebhookHttpOptions } from "./webhook-http.ts";
export { createGitWebhookHttpHandler, gitWebhookRoute } from "./webhook-http.ts";
export type {
  ReceivedWebhook,
  SignedWebhookHeaders,
  WebhookHeaderMap,
  WebhookIntake,
  WebhookIntakeOptions,
  WebhookProvider,
} from "./webhook-intake.ts";
export {
  createWebhookIntake,
  replyWebhook,
  verifyWebhook,
  type WebhookCheck,
  webhookHeaders,
} from "./webhook-intake.ts";
export type { LoadWebhookSecretsOptions } from "./webhook-secrets.ts";
export { loadWebhookSecrets } from "./webhook-secrets.ts";
