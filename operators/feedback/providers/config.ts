// Which code host a hub reports to and with what credentials: from flags, files and environment.
// Tokens and App keys are read here and handed to the client; they appear in no log or error.
import { readFile } from "node:fs/promises";
import { normaliseRepoUrl } from "../../source/index.ts";
import { createGiteaProvider } from "./gitea.ts";
import { createGitHubProvider, GITHUB_API } from "./github.ts";
import type { ProviderAuth } from "./octokit.ts";
import type { FeedbackProvider, RepoRef } from "./types.ts";

export type ProviderKind = "github" | "gitea";

export interface ProviderConfig {
  kind: ProviderKind;
  /** API root; default https://api.github.com for github, required for gitea and GitHub Enterprise. */
  apiUrl?: string;
  /** `--feedback-token-file`, else RLARK_FEEDBACK_TOKEN. */
  tokenFile?: string;
  /** GitHub App: id, private key file (or RLARK_GITHUB_APP_PRIVATE_KEY), installation id. */
  appId?: string;
  appPrivateKeyFile?: string;
  installationId?: string;
  env?: NodeJS.ProcessEnv;
}

export interface ProviderRuntimeOptions {
  retryBaseMs?: number;
  fetch?: typeof fetch;
  logger?: import("../../lib/logger.ts").Logger;
}

/** Reads the credentials and builds the provider. Throws (without the secret) when none is found. */
export async function loadFeedbackProvider(
  config: ProviderConfig,
  runtime: ProviderRuntimeOptions = {},
): Promise<FeedbackProvider> {
  const env = config.env ?? process.env;
  const appKey = config.appPrivateKeyFile
    ? await readFile(config.appPrivateKeyFile, "utf8")
    : env.RLARK_GITHUB_APP_PRIVATE_KEY;
  let auth: ProviderAuth;
  if (config.kind === "github" && config.appId && appKey) {
    if (!config.installationId) throw new Error("a GitHub App needs --feedback-installation-id");
    auth = { appId: config.appId, privateKey: appKey, installationId: config.installationId };
  } else {
    const token = config.tokenFile
      ? (await readFile(config.tokenFile, "utf8")).trim()
      : env.RLARK_FEEDBACK_TOKEN?.trim();
    if (!token) throw new Error("no code host token: pass --feedback-token-file or set RLARK_FEEDBACK_TOKEN");
    auth = { token };
  }
  if (config.kind === "gitea") {
    if (!config.apiUrl) throw new Error("Gitea needs its API URL (https://<host>/api/v1)");
    if (!("token" in auth)) throw new Error("Gitea takes a token");
    return createGiteaProvider({ baseUrl: config.apiUrl, token: auth.token, ...runtime });
  }
  return createGitHubProvider({ baseUrl: config.apiUrl ?? GITHUB_API, auth, ...runtime });
}

/** owner/repo of a repository URL (https, ssh, scp-like) as the hub's --repo gives it. */
export function repoRefFromUrl(url: string): RepoRef {
  const segments = normaliseRepoUrl(url).split("/").filter(Boolean);
  const repo = segments.pop();
  const owner = segments.pop();
  if (!owner || !repo) throw new Error(`cannot tell owner/name from ${JSON.stringify(url)}`);
  return { owner, repo };
}
