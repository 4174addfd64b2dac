// GitHub and GitHub Enterprise: what every host shares (rest-provider.ts) with GitHub's paging
// and review-comment placement, and check runs when the credentials are a GitHub App's.
import type { Logger } from "../../lib/logger.ts";
import type { FeedbackOctokit, ProviderAuth } from "./octokit.ts";
import { call, hostOctokit, restProvider } from "./rest-provider.ts";
import type { FeedbackProvider, InlineFinding, RepoRef } from "./types.ts";

export interface GitHubProviderOptions {
  /** https://api.github.com (default) or a GitHub Enterprise Server's https://<host>/api/v3. */
  baseUrl?: string;
  auth: ProviderAuth;
  retryBaseMs?: number;
  retries?: number;
  fetch?: typeof fetch;
  logger?: Logger;
}

export const GITHUB_API = "https://api.github.com";
/** GitHub takes at most 50 annotations per check-run request. */
const ANNOTATIONS_PER_REQUEST = 50;

export function createGitHubProvider(options: GitHubProviderOptions): FeedbackProvider {
  const octokit = hostOctokit(options.baseUrl ?? GITHUB_API, options.auth, options);
  const checkRuns = "appId" in options.auth;
  const provider = restProvider(octokit, {
    kind: "github",
    checkRuns,
    paging: { parameter: "per_page", size: 100 },
    reviewComment: (f, body) => ({ path: f.path, line: f.line, side: "RIGHT", body }),
  });
  // A GitHub App reports findings as check-run annotations instead of a review.
  return checkRuns
    ? { ...provider, publishFindings: (repo, _pull, sha, input) => checkRun(octokit, repo, sha, input) }
    : provider;
}

function checkRun(
  octokit: FeedbackOctokit,
  repo: RepoRef,
  sha: string,
  input: { name: string; summary: string; findings: InlineFinding[]; conclusion: "success" | "failure" },
): Promise<void> {
  return call("creating a check run", repo, async () => {
    const annotations = input.findings.map((f) => ({
      path: f.path,
      start_line: f.line,
      end_line: f.line,
      annotation_level: f.level,
      message: f.message,
      ...(f.title ? { title: f.title } : {}),
    }));
    const output = (batch: typeof annotations) => ({
      title: input.name,
      summary: input.summary,
      annotations: batch,
    });
    const { data } = await octokit.request("POST /repos/{owner}/{repo}/check-runs", {
      ...repo,
      name: input.name,
      head_sha: sha,
      status: "completed",
      conclusion: input.conclusion,
      output: output(annotations.slice(0, ANNOTATIONS_PER_REQUEST)),
    });
    for (let i = ANNOTATIONS_PER_REQUEST; i < annotations.length; i += ANNOTATIONS_PER_REQUEST) {
      await octokit.request("PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}", {
        ...repo,
        check_run_id: data.id,
        output: output(annotations.slice(i, i + ANNOTATIONS_PER_REQUEST)),
      });
    }
  });
}
