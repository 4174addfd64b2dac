import { createHmac, timingSafeEqual } from "node:crypto";
import { verify } from "@octokit/webhooks-methods";

export interface GitWebhookRequest {
  headers: Readonly<Record<string, string | readonly string[] | undefined>>;
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

type Provider = "github" | "gitea";

function header(headers: GitWebhookRequest["headers"], name: string): string | undefined {
  const value = headers[name] ?? headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : (value as string | undefined);
}

/** Lower-cased header map, so callers may pass node's (already lower) or fetch-style names. */
function lower(headers: GitWebhookRequest["headers"]): GitWebhookRequest["headers"] {
  const out: Record<string, string | readonly string[] | undefined> = {};
  for (const [key, value] of Object.entries(headers)) out[key.toLowerCase()] = value;
  return out;
}

async function githubSignatureValid(
  secrets: readonly string[],
  body: string,
  signature: string,
): Promise<boolean> {
  for (const secret of secrets) {
    if (await verify(secret, body, signature)) return true;
  }
  return false;
}

function giteaSignatureValid(secrets: readonly string[], body: Buffer, signature: string): boolean {
  const given = Buffer.from(signature.trim().replace(/^sha256=/, ""), "utf8");
  let valid = false;
  // Check every secret (no early exit) so timing does not tell which one matched.
  for (const secret of secrets) {
    const expected = Buffer.from(createHmac("sha256", secret).update(body).digest("hex"), "utf8");
    if (expected.length === given.length && timingSafeEqual(expected, given)) valid = true;
  }
  return valid;
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
export async function handleGitWebhook(
  request: GitWebhookRequest,
  options: GitWebhookOptions,
): Promise<GitWebhookResult> {
  const headers = lower(request.headers);
  const giteaEvent =
    header(headers, "x-gitea-event") ?? header(headers, "x-forgejo-event") ?? header(headers, "x-gogs-event");
  const githubEvent = header(headers, "x-github-event");
  const provider: Provider | undefined = giteaEvent ? "gitea" : githubEvent ? "github" : undefined;
  const event = giteaEvent ?? githubEvent;
  if (!provider || !event) {
    return {
      status: 400,
      message: "not a GitHub or Gitea webhook (no X-GitHub-Event or X-Gitea-Event)",
      trigger: false,
    };
  }
  const secrets = options.secrets.filter((s) => s !== "");
  if (secrets.length === 0) {
    return {
      status: 401,
      message: "no webhook secret is configured; refusing unsigned webhooks",
      trigger: false,
    };
  }

  if (provider === "github") {
    const signature = header(headers, "x-hub-signature-256");
    if (!signature) return { status: 401, message: "missing X-Hub-Signature-256", trigger: false };
    if (!(await githubSignatureValid(secrets, request.body.toString("utf8"), signature)))
      return { status: 401, message: "X-Hub-Signature-256 does not match", trigger: false };
  } else {
    const signature =
      header(headers, "x-gitea-signature") ??
      header(headers, "x-forgejo-signature") ??
      header(headers, "x-gogs-signature") ??
      header(headers, "x-hub-signature-256");
    if (!signature) return { status: 401, message: "missing X-Gitea-Signature", trigger: false };
    if (!giteaSignatureValid(secrets, request.body, signature))
      return { status: 401, message: "X-Gitea-Signature does not match", trigger: false };
  }

  if (event === "ping") return { status: 204, message: "pong", trigger: false };
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
