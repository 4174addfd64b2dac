// GitHub and GitHub Enterprise: the REST endpoints for statuses, issue comments, reviews,
// check runs and pull requests.
import type { Logger } from "../../lib/logger.ts";
import { createOctokit, type FeedbackOctokit, type ProviderAuth, requestStatus } from "./octokit.ts";
import {
  type CommitStatus,
  type FeedbackProvider,
  FeedbackProviderError,
  fitDescription,
  type InlineFinding,
  type IssueComment,
  type PullRequestRef,
  type RepoRef,
} from "./types.ts";

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
const PAGE = 100;

interface RawPull {
  number: number;
  head: { sha: string; ref: string; repo: { full_name: string } | null };
  base: { ref: string; repo: { full_name: string } };
}

export function toPullRequestRef(pull: RawPull): PullRequestRef {
  return {
    number: pull.number,
    headSha: pull.head.sha,
    headRef: pull.head.ref,
    baseRef: pull.base.ref,
    // A deleted fork has no head repo: treat it as a fork, the safe side.
    fork: pull.head.repo?.full_name.toLowerCase() !== pull.base.repo.full_name.toLowerCase(),
  };
}

export function createGitHubProvider(options: GitHubProviderOptions): FeedbackProvider {
  return new GitHubProvider(options);
}

/** The statuses endpoint has the same shape on GitHub, GitHub Enterprise and Gitea. */
export function postCommitStatus(
  octokit: FeedbackOctokit,
  repo: RepoRef,
  sha: string,
  status: CommitStatus,
): Promise<void> {
  return call("setting a commit status", repo, async () => {
    await octokit.request("POST /repos/{owner}/{repo}/statuses/{sha}", {
      ...repo,
      sha,
      state: status.state,
      context: status.context,
      description: fitDescription(status.description),
      ...(status.targetUrl ? { target_url: status.targetUrl } : {}),
    });
  });
}

export async function call<T>(what: string, repo: RepoRef, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    const status = requestStatus(error);
    const detail = error instanceof Error ? error.message.split("\n")[0] : String(error);
    throw new FeedbackProviderError(
      `${what} on ${repo.owner}/${repo.repo} failed${status ? ` (HTTP ${status})` : ""}: ${detail}`,
      status,
    );
  }
}

class GitHubProvider implements FeedbackProvider {
  readonly kind = "github" as const;
  readonly checkRuns: boolean;
  #octokit: FeedbackOctokit;

  constructor(options: GitHubProviderOptions) {
    this.checkRuns = "appId" in options.auth;
    this.#octokit = createOctokit({
      baseUrl: options.baseUrl ?? GITHUB_API,
      auth: options.auth,
      ...(options.retryBaseMs === undefined ? {} : { retryBaseMs: options.retryBaseMs }),
      ...(options.retries === undefined ? {} : { retries: options.retries }),
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
    });
  }

  setCommitStatus(repo: RepoRef, sha: string, status: CommitStatus): Promise<void> {
    return postCommitStatus(this.#octokit, repo, sha, status);
  }

  listComments(repo: RepoRef, pull: number): Promise<IssueComment[]> {
    return call("listing comments", repo, async () => {
      const out: IssueComment[] = [];
      for (let page = 1; ; page++) {
        const { data } = await this.#octokit.request(
          "GET /repos/{owner}/{repo}/issues/{issue_number}/comments",
          {
            ...repo,
            issue_number: pull,
            per_page: PAGE,
            page,
          },
        );
        for (const c of data) out.push({ id: Number(c.id), body: c.body ?? "" });
        if (data.length < PAGE) return out;
      }
    });
  }

  createComment(repo: RepoRef, pull: number, body: string): Promise<IssueComment> {
    return call("creating a comment", repo, async () => {
      const { data } = await this.#octokit.request(
        "POST /repos/{owner}/{repo}/issues/{issue_number}/comments",
        {
          ...repo,
          issue_number: pull,
          body,
        },
      );
      return { id: Number(data.id), body: data.body ?? body };
    });
  }

  updateComment(repo: RepoRef, id: number, body: string): Promise<void> {
    return call("editing a comment", repo, async () => {
      await this.#octokit.request("PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}", {
        ...repo,
        comment_id: id,
        body,
      });
    });
  }

  publishFindings(
    repo: RepoRef,
    pull: number,
    sha: string,
    input: { name: string; summary: string; findings: InlineFinding[]; conclusion: "success" | "failure" },
  ): Promise<void> {
    if (this.checkRuns) return this.#checkRun(repo, sha, input);
    return call("creating a review", repo, async () => {
      if (input.findings.length === 0) return;
      await this.#octokit.request("POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews", {
        ...repo,
        pull_number: pull,
        commit_id: sha,
        event: "COMMENT",
        body: input.summary,
        comments: input.findings.map((f) => ({
          path: f.path,
          line: f.line,
          side: "RIGHT" as const,
          body: f.title ? `**${f.title}**: ${f.message}` : f.message,
        })),
      });
    });
  }

  #checkRun(
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
      const { data } = await this.#octokit.request("POST /repos/{owner}/{repo}/check-runs", {
        ...repo,
        name: input.name,
        head_sha: sha,
        status: "completed",
        conclusion: input.conclusion,
        output: output(annotations.slice(0, ANNOTATIONS_PER_REQUEST)),
      });
      for (let i = ANNOTATIONS_PER_REQUEST; i < annotations.length; i += ANNOTATIONS_PER_REQUEST) {
        await this.#octokit.request("PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}", {
          ...repo,
          check_run_id: data.id,
          output: output(annotations.slice(i, i + ANNOTATIONS_PER_REQUEST)),
        });
      }
    });
  }

  listOpenPullRequests(repo: RepoRef): Promise<PullRequestRef[]> {
    return call("listing pull requests", repo, async () => {
      const out: PullRequestRef[] = [];
      for (let page = 1; ; page++) {
        const { data } = await this.#octokit.request("GET /repos/{owner}/{repo}/pulls", {
          ...repo,
          state: "open",
          per_page: PAGE,
          page,
        });
        for (const pull of data) out.push(toPullRequestRef(pull));
        if (data.length < PAGE) return out;
      }
    });
  }
}
