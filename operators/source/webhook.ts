import { verifyWebhook, type WebhookHeaderMap } from "./webhook-intake.ts";

export interface GitWebhookRequest {
  headers: WebhookHeaderMap;
  body: Buffer;
}

export interface GitWebhookOptions {
  /** Every secret currently accepted; more than one while a secret rotates. */
  secrets: readonly string[];
  /** The repository the hub tracks, as given to --repo. */
  repoUrl: string;
  branch: string;
}

export interface GitWebhookResult {
  status: 202 | 204 | 400 | 401;
  message: string;
  /** True when the hub should fetch now. */
  trigger: boolean;
}

/**
 * Reduces any way of naming a repository to `host/owner/name` (lower case, no scheme, port,
 * credentials or `.git`), so a push's clone_url, ssh_url or html_url matches what --repo says.
 */
export function normaliseRepoUrl(url: string): string {
  let text = url.trim();
  const scp = /^(?:[^@/\s]+@)?([^:/\s]+):(?!\/\/)(.*)$/.exec(text);
  if (scp && !/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    text = `${scp[1]}/${scp[2]}`;
  } else {
    try {
      const parsed = new URL(text);
      text = parsed.protocol === "file:" ? parsed.pathname : `${parsed.hostname}${parsed.pathname}`;
    } catch {
      // Not a URL: a local path, or already host/owner/name.
    }
  }
  return text
    .toLowerCase()
    .replace(/\/+$/, "")
    .replace(/\.git$/, "")
    .replace(/\/+$/, "");
}

interface PushRepository {
  clone_url?: unknown;
  ssh_url?: unknown;
  html_url?: unknown;
  git_url?: unknown;
  full_name?: unknown;
}

function repositoryMatches(repository: PushRepository | undefined, repoUrl: string): boolean {
  if (!repository) return false;
  const wanted = normaliseRepoUrl(repoUrl);
  const urls = [repository.clone_url, repository.ssh_url, repository.html_url, repository.git_url]
    .filter((u): u is string => typeof u === "string" && u !== "")
    .map(normaliseRepoUrl);
  if (urls.includes(wanted)) return true;
  // Fall back to owner/name: the payload is already authenticated, and hosts differ behind proxies.
  if (typeof repository.full_name === "string" && repository.full_name) {
    const fullName = repository.full_name.toLowerCase();
    return wanted === fullName || wanted.endsWith(`/${fullName}`);
  }
  return false;
}

/**
 * Decides what a push webhook means for the hub. Pure: no I/O besides hashing, so the
 * HTTP layer stays thin. The signature is checked before the body is even parsed.
 */
export function handleGitWebhook(request: GitWebhookRequest, options: GitWebhookOptions): GitWebhookResult {
  const checked = verifyWebhook(request, options.secrets);
  if (!("signed" in checked)) return { ...checked, trigger: false };
  const { event } = checked.signed;
  if (event !== "push")
    return { status: 202, message: `ignored: ${event} events do not move branches`, trigger: false };

  let payload: { ref?: unknown; repository?: PushRepository };
  try {
    payload = JSON.parse(request.body.toString("utf8")) as typeof payload;
  } catch {
    return { status: 400, message: "push payload is not JSON", trigger: false };
  }
  if (typeof payload !== "object" || payload === null || typeof payload.ref !== "string") {
    return { status: 400, message: "push payload has no ref", trigger: false };
  }
  if (!repositoryMatches(payload.repository, options.repoUrl)) {
    const name =
      typeof payload.repository?.full_name === "string" ? payload.repository.full_name : "another repository";
    return { status: 202, message: `ignored: push to ${name}, not the tracked repository`, trigger: false };
  }
  const tracked = `refs/heads/${options.branch.replace(/^refs\/heads\//, "")}`;
  if (payload.ref !== tracked) {
    return {
      status: 202,
      message: `ignored: push to ${payload.ref}, not the tracked ${tracked}`,
      trigger: false,
    };
  }
  return { status: 202, message: `push to ${tracked}: fetching`, trigger: true };
}
