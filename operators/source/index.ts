export { loadAddonCatalog } from "./addon-catalog.ts";
export type { GitAuth, GitCredentials, LoadGitCredentialsOptions } from "./git-auth.ts";
export { loadGitCredentials, prepareGitAuth, repoKey, scrubUrl } from "./git-auth.ts";
export type { GitExecOptions } from "./git-exec.ts";
export { gitIn } from "./git-exec.ts";
export { registerGitSourceMetrics } from "./git-metrics.ts";
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
export { createGitWatcher, normaliseSourcePath } from "./git-watcher.ts";
export { type ValidatePathsOptions, validatePaths } from "./validate-paths.ts";
export type { GitWebhookOptions, GitWebhookRequest, GitWebhookResult } from "./webhook.ts";
export { handleGitWebhook, normaliseRepoUrl } from "./webhook.ts";
export type { GitWebhookHttpOptions } from "./webhook-http.ts";
export { createGitWebhookHttpHandler } from "./webhook-http.ts";
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
  NO_SECRET,
  NOT_A_WEBHOOK,
  replyWebhook,
  webhookHeaders,
  webhookSignatureValid,
} from "./webhook-intake.ts";
export type { LoadWebhookSecretsOptions } from "./webhook-secrets.ts";
export { loadWebhookSecrets } from "./webhook-secrets.ts";
