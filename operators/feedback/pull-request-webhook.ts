// Pull-request webhooks from GitHub and Gitea/Forgejo, reduced to what a review needs. The
// signature is checked (against every accepted secret, so secrets rotate) before the body is
// parsed; nothing in the payload is trusted beyond naming the pull request to look at.
import { createHmac, timingSafeEqual } from "node:crypto";
import { verify } from "@octokit/webhooks-methods";
import type { RepoRef } from "./providers/index.ts";

export interface WebhookRequest {
  headers: Readonly<Record<string, string | readonly string[] | undefined>>;
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

function header(headers: WebhookRequest["headers"], name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name) continue;
    return Array.isArray(value) ? (value[0] as string | undefined) : (value as string | undefined);
  }
  return undefined;
}

async function githubValid(secrets: readonly string[], body: Buffer, signature: string): Promise<boolean> {
  let valid = false;
  const text = body.toString("utf8");
  for (const secret of secrets) if (await verify(secret, text, signature)) valid = true;
  return valid;
}

function giteaValid(secrets: readonly string[], body: Buffer, signature: string): boolean {
  const given = Buffer.from(signature.trim().replace(/^sha256=/, ""), "utf8");
  let valid = false;
  for (const secret of secrets) {
    const expected = Buffer.from(createHmac("sha256", secret).update(body).digest("hex"), "utf8");
    if (expected.length === given.length && timingSafeEqual(expected, given)) valid = true;
  }
  return valid;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function str(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/** Which event a webhook request carries, from its headers alone (to route before reading the body). */
export function webhookEvent(headers: WebhookRequest["headers"]): string | undefined {
  return (
    header(headers, "x-gitea-event") ??
    header(headers, "x-forgejo-event") ??
    header(headers, "x-gogs-event") ??
    header(headers, "x-github-event")
  );
}

export async function parsePullRequestWebhook(
  request: WebhookRequest,
  options: { secrets: readonly string[]; repo: RepoRef; branch: string },
): Promise<WebhookVerdict> {
  const gitea = header(request.headers, "x-gitea-event") ?? header(request.headers, "x-forgejo-event");
  const github = header(request.headers, "x-github-event");
  const event = gitea ?? github;
  if (!event)
    return { status: 400, message: "not a GitHub or Gitea webhook (no X-GitHub-Event or X-Gitea-Event)" };
  const secrets = options.secrets.filter((s) => s !== "");
  if (secrets.length === 0)
    return { status: 401, message: "no webhook secret is configured; refusing unsigned webhooks" };
  if (gitea) {
    const signature =
      header(request.headers, "x-gitea-signature") ??
      header(request.headers, "x-forgejo-signature") ??
      header(request.headers, "x-hub-signature-256");
    if (!signature || !giteaValid(secrets, request.body, signature))
      return { status: 401, message: "X-Gitea-Signature is missing or does not match" };
  } else {
    const signature = header(request.headers, "x-hub-signature-256");
    if (!signature || !(await githubValid(secrets, request.body, signature)))
      return { status: 401, message: "X-Hub-Signature-256 is missing or does not match" };
  }
  if (event === "ping") return { status: 204, message: "pong" };
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
      delivery:
        header(request.headers, "x-github-delivery") ?? header(request.headers, "x-gitea-delivery") ?? "",
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
