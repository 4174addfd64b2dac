// What feedback needs from a code host: commit statuses, one editable PR comment, inline
// findings, and the list of open pull requests. GitHub, GitHub Enterprise and Gitea/Forgejo each
// implement it; everything above this interface is host-neutral.

export interface RepoRef {
  owner: string;
  repo: string;
}

export type CommitState = "pending" | "success" | "failure" | "error";

export interface CommitStatus {
  /** `rlark/sync`, `rlark/plan`, ... */
  context: string;
  state: CommitState;
  /** Hosts cap it (GitHub at 140 characters); providers shorten it. */
  description: string;
  targetUrl?: string;
}

export interface IssueComment {
  id: number;
  body: string;
}

/** A finding at a file and line of the pull request's head. */
export interface InlineFinding {
  path: string;
  line: number;
  message: string;
  /** "failure" for errors, "warning" for warnings. */
  level: "failure" | "warning";
  title?: string;
}

export interface PullRequestRef {
  number: number;
  headSha: string;
  headRef: string;
  baseRef: string;
  /** The head lives in another repository (a fork): its code is never trusted with anything. */
  fork: boolean;
}

export interface FeedbackProvider {
  readonly kind: "github" | "gitea";
  /** True when inline findings go as check-run annotations (a GitHub App), else as review comments. */
  readonly checkRuns: boolean;
  setCommitStatus(repo: RepoRef, sha: string, status: CommitStatus): Promise<void>;
  /** Every comment of the pull request (all pages), oldest first. */
  listComments(repo: RepoRef, pull: number): Promise<IssueComment[]>;
  createComment(repo: RepoRef, pull: number, body: string): Promise<IssueComment>;
  updateComment(repo: RepoRef, id: number, body: string): Promise<void>;
  /**
   * Publishes inline findings on `sha`: a check run with annotations (checkRuns) or one review
   * with a comment per finding. Findings on lines outside the diff are the caller's to filter.
   */
  publishFindings(
    repo: RepoRef,
    pull: number,
    sha: string,
    input: { name: string; summary: string; findings: InlineFinding[]; conclusion: "success" | "failure" },
  ): Promise<void>;
  listOpenPullRequests(repo: RepoRef): Promise<PullRequestRef[]>;
}

/** A host call that failed; the message names the operation and status, never a credential. */
export class FeedbackProviderError extends Error {
  override name = "FeedbackProviderError";
  readonly status: number | undefined;
  constructor(message: string, status?: number) {
    super(message);
    this.status = status;
  }
}

const DESCRIPTION_LIMIT = 140;

/** Shortens to the hosts' description limit, on a word boundary where one is near. */
export function fitDescription(text: string, limit = DESCRIPTION_LIMIT): string {
  const flat = text.replace(/\s+/g, " ").trim();
  if (flat.length <= limit) return flat;
  const cut = flat.slice(0, limit - 1);
  const space = cut.lastIndexOf(" ");
  return `${space > limit * 0.6 ? cut.slice(0, space) : cut}…`;
}
