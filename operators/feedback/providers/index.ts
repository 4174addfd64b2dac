// Code hosts feedback reports to: GitHub, GitHub Enterprise (a base URL), Gitea and Forgejo.
//
//   const provider = await loadFeedbackProvider({ kind: "github", tokenFile });
//   await provider.setCommitStatus({ owner, repo }, sha, { context: "rlark/sync", state: "success", description });
export { loadFeedbackProvider, type ProviderConfig, type ProviderKind, repoRefFromUrl } from "./config.ts";
export { createGiteaProvider, type GiteaProviderOptions } from "./gitea.ts";
export { createGitHubProvider, GITHUB_API, type GitHubProviderOptions } from "./github.ts";
export type { ProviderAuth } from "./octokit.ts";
export {
  type CommitState,
  type CommitStatus,
  type FeedbackProvider,
  FeedbackProviderError,
  fitDescription,
  type InlineFinding,
  type IssueComment,
  type PullRequestRef,
  type RepoRef,
} from "./types.ts";
