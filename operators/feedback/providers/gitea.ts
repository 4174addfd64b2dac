// Gitea and Forgejo: GitHub's paths and shapes for what they share (rest-provider.ts, base URL
// https://<host>/api/v1), with Gitea's paging (`limit`) and review comments placed with
// `new_position`. Gitea has no check runs: findings are always review comments.
import type { Logger } from "../../lib/logger.ts";
import { hostOctokit, restProvider } from "./rest-provider.ts";
import type { FeedbackProvider } from "./types.ts";

export interface GiteaProviderOptions {
  /** The API root, https://<host>/api/v1. */
  baseUrl: string;
  token: string;
  retryBaseMs?: number;
  retries?: number;
  fetch?: typeof fetch;
  logger?: Logger;
}

export function createGiteaProvider(options: GiteaProviderOptions): FeedbackProvider {
  return restProvider(hostOctokit(options.baseUrl, { token: options.token }, options), {
    kind: "gitea",
    checkRuns: false,
    paging: { parameter: "limit", size: 50 },
    reviewComment: (f, body) => ({ path: f.path, new_position: f.line, body }),
  });
}
