// The half GitHub and Gitea/Forgejo share. Statuses, issue comments, reviews and pull-request
// listing have the same paths and shapes on both (Gitea calls the number `{index}`, which fills
// the same path segment as GitHub's `{issue_number}`), so one Octokit serves them; each host is a
// dialect: how it pages, where a review comment goes on the diff, and whether it has check runs.
import type { Logger } from "../../lib/logger.ts";
import { createOctokit, type FeedbackOctokit, type ProviderAuth, requestStatus } from "./octokit.ts";
import {
  type FeedbackProvider,
  FeedbackProviderError,
  fitDescription,
  type InlineFinding,
  type IssueComment,
  type PullRequestRef,
  type RepoRef,
} from "./types.ts";

/** The client options both providers take. */
export interface HostClientOptions {
  retryBaseMs?: number;
  retries?: number;
  fetch?: typeof fetch;
  logger?: Logger;
}

export function hostOctokit(
  baseUrl: string,
  auth: ProviderAuth,
  options: HostClientOptions,
): FeedbackOctokit {
  return createOctokit({
    baseUrl,
    auth,
    ...(options.retryBaseMs === undefined ? {} : { retryBaseMs: options.retryBaseMs }),
    ...(options.retries === undefined ? {} : { retries: options.retries }),
    ...(options.fetch ? { fetch: options.fetch } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
  });
}

export interface HostDialect {
  kind: FeedbackProvider["kind"];
  checkRuns: boolean;
  /** The host's page-size query parameter (GitHub `per_page`, Gitea `limit`) and the size asked for. */
  paging: { parameter: "per_page" | "limit"; size: number };
  /** A finding as one comment of a review, placed on the diff the host's way. */
  reviewComment(finding: InlineFinding, body: string): Record<string, unknown>;
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

interface RawPull {
  number: number;
  head: { sha: string; ref: string; repo: { full_name: string } | null };
  base: { ref: string; repo: { full_name: string } };
}

function toPullRequestRef(pull: RawPull): PullRequestRef {
  return {
    number: pull.number,
    headSha: pull.head.sha,
    headRef: pull.head.ref,
    baseRef: pull.base.ref,
    // A deleted fork has no head repo: treat it as a fork, the safe side.
    fork: pull.head.repo?.full_name.toLowerCase() !== pull.base.repo.full_name.toLowerCase(),
  };
}

/** Every page of a listing: a page shorter than the size asked for is the last. */
async function allPages<T>(
  dialect: HostDialect,
  fetchPage: (query: Record<string, number>) => Promise<T[]>,
): Promise<T[]> {
  const out: T[] = [];
  for (let page = 1; ; page++) {
    const items = await fetchPage({ page, [dialect.paging.parameter]: dialect.paging.size });
    out.push(...items);
    if (items.length < dialect.paging.size) return out;
  }
}

/** A provider speaking `dialect`; findings go as one review (a host with check runs overrides it). */
export function restProvider(octokit: FeedbackOctokit, dialect: HostDialect): FeedbackProvider {
  return {
    kind: dialect.kind,
    checkRuns: dialect.checkRuns,

    setCommitStatus: (repo, sha, status) =>
      call("setting a commit status", repo, async () => {
        await octokit.request("POST /repos/{owner}/{repo}/statuses/{sha}", {
          ...repo,
          sha,
          state: status.state,
          context: status.context,
          description: fitDescription(status.description),
          ...(status.targetUrl ? { target_url: status.targetUrl } : {}),
        });
      }),

    listComments: (repo, pull) =>
      call("listing comments", repo, () =>
        allPages<IssueComment>(dialect, async (query) => {
          const { data } = await octokit.request("GET /repos/{owner}/{repo}/issues/{issue_number}/comments", {
            ...repo,
            issue_number: pull,
            ...query,
          });
          return data.map((c) => ({ id: Number(c.id), body: c.body ?? "" }));
        }),
      ),

    createComment: (repo, pull, body) =>
      call("creating a comment", repo, async () => {
        const { data } = await octokit.request("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", {
          ...repo,
          issue_number: pull,
          body,
        });
        return { id: Number(data.id), body: data.body ?? body };
      }),

    updateComment: (repo, id, body) =>
      call("editing a comment", repo, async () => {
        await octokit.request("PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}", {
          ...repo,
          comment_id: id,
          body,
        });
      }),

    publishFindings: (repo, pull, sha, input) =>
      call("creating a review", repo, async () => {
        if (input.findings.length === 0) return;
        await octokit.request("POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews", {
          ...repo,
          pull_number: pull,
          commit_id: sha,
          event: "COMMENT",
          body: input.summary,
          comments: input.findings.map(
            (f) =>
              dialect.reviewComment(f, f.title ? `**${f.title}**: ${f.message}` : f.message) as {
                path: string;
                body: string;
              },
          ),
        });
      }),

    listOpenPullRequests: (repo) =>
      call("listing pull requests", repo, () =>
        allPages<PullRequestRef>(dialect, async (query) => {
          const { data } = await octokit.request("GET /repos/{owner}/{repo}/pulls", {
            ...repo,
            state: "open",
            ...query,
          });
          return (data as RawPull[]).map(toPullRequestRef);
        }),
      ),
  };
}
