// Pull-request webhooks from GitHub and Gitea/Forgejo, reduced to what a review needs. The
// signature is checked (against every accepted secret, so secrets rotate) before the body is
// parsed; nothing in the payload is trusted beyond naming the pull request to look at.
import { verifyWebhook, type WebhookHeaderMap } from "../source/index.ts";
import type { RepoRef } from "./providers/index.ts";

export interface WebhookRequest {
  headers: WebhookHeaderMap;
  body: Buffer;
}

export interface PullRequestEvent {
  /** X-GitHub-Delivery / X-Gitea-Delivery; "" when the host sent none. */
  delivery: string;
  number: number;
  headSha: string;
  headRef: string;
  baseRef: string;
  fork: boolean;
  /** The repository's web page, for links in the comment. */
  htmlUrl: string;
}

export type WebhookVerdict =
  | { status: 202; message: string; event?: PullRequestEvent }
  | { status: 204; message: string }
  | { status: 400 | 401; message: string };

/** Actions after which the head may be new: GitHub's `synchronize`, Gitea's `synchronized`. */
const REVIEWED_ACTIONS = new Set(["opened", "reopened", "synchronize", "synchronized"]);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function str(value: unknown): string {
  return typeof value === "string" ? value : "";
}

export function parsePullRequestWebhook(
  request: WebhookRequest,
  options: { secrets: readonly string[]; repo: RepoRef; branch: string },
): WebhookVerdict {
  const checked = verifyWebhook(request, options.secrets);
  if (!("signed" in checked)) return checked;
  const { signed } = checked;
  const { event } = signed;
  if (event !== "pull_request")
    return { status: 202, message: `ignored: ${event} is not a pull_request event` };

  let payload: unknown;
  try {
    payload = JSON.parse(request.body.toString("utf8"));
  } catch {
    return { status: 400, message: "pull_request payload is not JSON" };
  }
  if (!isRecord(payload) || !isRecord(payload.pull_request) || !isRecord(payload.repository))
    return { status: 400, message: "pull_request payload has no pull_request or repository" };
  const action = str(payload.action);
  if (!REVIEWED_ACTIONS.has(action))
    return { status: 202, message: `ignored: pull_request ${action || "without action"}` };
  const pull = payload.pull_request;
  const head = isRecord(pull.head) ? pull.head : {};
  const base = isRecord(pull.base) ? pull.base : {};
  const fullName = str(payload.repository.full_name).toLowerCase();
  if (fullName !== `${options.repo.owner}/${options.repo.repo}`.toLowerCase())
    return {
      status: 202,
      message: `ignored: pull request on ${fullName || "another repository"}, not the tracked one`,
    };
  const baseRef = str(base.ref);
  const branch = options.branch.replace(/^refs\/heads\//, "");
  if (baseRef !== branch)
    return { status: 202, message: `ignored: pull request into ${baseRef}, not ${branch}` };
  const number =
    typeof payload.number === "number" ? payload.number : typeof pull.number === "number" ? pull.number : 0;
  const headSha = str(head.sha);
  if (!Number.isInteger(number) || number <= 0 || !/^[0-9a-f]{40}$/.test(headSha))
    return { status: 400, message: "pull_request payload has no number or head sha" };
  const headRepo = isRecord(head.repo) ? str(head.repo.full_name).toLowerCase() : "";
  return {
    status: 202,
    message: `pull request #${number} at ${headSha.slice(0, 7)}: review queued`,
    event: {
      delivery: signed.delivery,
      number,
      headSha,
      headRef: str(head.ref),
      baseRef,
      // A head repository other than the base one (or a deleted fork) is a fork.
      fork: headRepo !== fullName,
      htmlUrl: str(payload.repository.html_url),
    },
  };
}
