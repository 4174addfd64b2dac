// Code hosts feedback reports to: GitHub, GitHub Enterprise (a base URL), Gitea and Forgejo.
//
//   const provider = await loadFeedbackProvider({ kind: "github", tokenFile });
//   await provider.setCommitStatus({ owner, repo }, sha, { context: "rlark/sync", state: "success", description });
export { loadFeedbackProvider, type ProviderConfig, repoRefFromUrl } from "./config.ts";
export { createGiteaProvider } from "./gitea.ts";
export { createGitHubProvider } from "./github.ts";
export {
  type CommitStatus,
  type FeedbackProvider,
  FeedbackProviderError,
  fitDescription,
  type InlineFinding,
  type PullRequestRef,
  type RepoRef,
} from "./types.ts";
