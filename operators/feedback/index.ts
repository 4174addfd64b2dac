export * as plan from "./plan/index.ts";
export { createTunnelDryRunner, liveFromStore } from "./plan/index.ts";
export {
  type FeedbackProvider,
  loadFeedbackProvider,
  type ProviderConfig,
  type RepoRef,
  repoRefFromUrl,
} from "./providers/index.ts";
// The pull_request webhook's parser, entered by hack/fuzz.
export { parsePullRequestWebhook } from "./pull-request-webhook.ts";
export {
  createPullRequestReviewer,
  type PullRequestReviewer,
  type PullRequestReviewerOptions,
} from "./pull-requests.ts";
export type {
  StatusBranchWriter,
  StatusBranchWriterOptions,
  StatusCommitResult,
  StatusDocument,
  StatusRemote,
} from "./status-branch.ts";
export { createStatusBranchWriter, DEFAULT_STATUS_BRANCH } from "./status-branch.ts";
export {
  documentPathOnBranch,
  type StatusBranchLayout,
  statusBranchPath,
  statusShard,
} from "./status-layout.ts";
export type { RenderStatusOptions } from "./status-yaml.ts";
export { renderStatusYaml, statusDocumentPath } from "./status-yaml.ts";
export { createSyncStatusReporter, type SyncStatusReporter } from "./sync-status.ts";
