// Gitea and Forgejo. Statuses and issue comments have GitHub's shapes, so the same Octokit
// serves them (base URL https://<host>/api/v1); pull-request listing pages with `limit`, and
// reviews place comments with `new_position`, so those two go through this thin adapter. Gitea
// has no check runs: findings are always review comments.
import type { Logger } from "../../lib/logger.ts";
import { call, postCommitStatus, toPullRequestRef } from "./github.ts";
import { createOctokit, type FeedbackOctokit } from "./octokit.ts";
import type {
  CommitStatus,
  FeedbackProvider,
  InlineFinding,
  IssueComment,
  PullRequestRef,
  RepoRef,
} from "./types.ts";

export interface GiteaProviderOptions {
  /** The API root, https://<host>/api/v1. */
  baseUrl: string;
  token: string;
  retryBaseMs?: number;
  retries?: number;
  fetch?: typeof fetch;
  logger?: Logger;
}

const PAGE = 50;

export function createGiteaProvider(options: GiteaProviderOptions): FeedbackProvider {
  return new GiteaProvider(options);
}

class GiteaProvider implements FeedbackProvider {
  readonly kind = "gitea" as const;
  readonly checkRuns = false;
  #octokit: FeedbackOctokit;

  constructor(options: GiteaProviderOptions) {
    this.#octokit = createOctokit({
      baseUrl: options.baseUrl,
      auth: { token: options.token },
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
        const { data } = await this.#octokit.request("GET /repos/{owner}/{repo}/issues/{index}/comments", {
          ...repo,
          index: pull,
          page,
          limit: PAGE,
        });
        const items = data as { id: number; body?: string }[];
        for (const c of items) out.push({ id: c.id, body: c.body ?? "" });
        if (items.length < PAGE) return out;
      }
    });
  }

  createComment(repo: RepoRef, pull: number, body: string): Promise<IssueComment> {
    return call("creating a comment", repo, async () => {
      const { data } = await this.#octokit.request("POST /repos/{owner}/{repo}/issues/{index}/comments", {
        ...repo,
        index: pull,
        body,
      });
      const created = data as { id: number; body?: string };
      return { id: created.id, body: created.body ?? body };
    });
  }

  updateComment(repo: RepoRef, id: number, body: string): Promise<void> {
    return call("editing a comment", repo, async () => {
      await this.#octokit.request("PATCH /repos/{owner}/{repo}/issues/comments/{id}", { ...repo, id, body });
    });
  }

  publishFindings(
    repo: RepoRef,
    pull: number,
    sha: string,
    input: { name: string; summary: string; findings: InlineFinding[] },
  ): Promise<void> {
    return call("creating a review", repo, async () => {
      if (input.findings.length === 0) return;
      await this.#octokit.request("POST /repos/{owner}/{repo}/pulls/{index}/reviews", {
        ...repo,
        index: pull,
        commit_id: sha,
        event: "COMMENT",
        body: input.summary,
        comments: input.findings.map((f) => ({
          path: f.path,
          new_position: f.line,
          body: f.title ? `**${f.title}**: ${f.message}` : f.message,
        })),
      });
    });
  }

  listOpenPullRequests(repo: RepoRef): Promise<PullRequestRef[]> {
    return call("listing pull requests", repo, async () => {
      const out: PullRequestRef[] = [];
      for (let page = 1; ; page++) {
        const { data } = await this.#octokit.request("GET /repos/{owner}/{repo}/pulls", {
          ...repo,
          state: "open",
          page,
          limit: PAGE,
        });
        const items = data as Parameters<typeof toPullRequestRef>[0][];
        for (const pull of items) out.push(toPullRequestRef(pull));
        if (items.length < PAGE) return out;
      }
    });
  }
}
