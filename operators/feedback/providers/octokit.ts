// One Octokit for every host: core + retry (5xx, with backoff) + throttling (primary and secondary
// rate limits). Gitea and Forgejo answer the same requests for what they share, so the same client
// talks to them with their API base URL.
import { createAppAuth } from "@octokit/auth-app";
import { Octokit } from "@octokit/core";
import { retry } from "@octokit/plugin-retry";
import { throttling } from "@octokit/plugin-throttling";
import { type Logger, silentLogger } from "../../lib/logger.ts";

export type ProviderAuth =
  | { token: string }
  | { appId: number | string; privateKey: string; installationId: number | string }
  | { none: true };

export interface OctokitOptions {
  /** API root: https://api.github.com, https://ghe.example.com/api/v3, https://gitea.example.com/api/v1. */
  baseUrl: string;
  auth: ProviderAuth;
  /** Base of the retry delays in ms (retry n waits n² × this); default 1000. */
  retryBaseMs?: number;
  retries?: number;
  /** How many times a rate-limited request is retried before it fails. */
  rateLimitRetries?: number;
  fetch?: typeof fetch;
  logger?: Logger;
  userAgent?: string;
}

const Client = Octokit.plugin(retry, throttling);
export type FeedbackOctokit = InstanceType<typeof Client>;

export function createOctokit(options: OctokitOptions): FeedbackOctokit {
  const log = options.logger ?? silentLogger;
  const retryBase = options.retryBaseMs ?? 1000;
  const rateLimitRetries = options.rateLimitRetries ?? 3;
  const auth = options.auth;
  const common = {
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    userAgent: options.userAgent ?? "rlark-feedback",
    request: options.fetch ? { fetch: options.fetch } : {},
    // Octokit's own logging would print request details; ours gets only what we choose.
    log: { debug() {}, info() {}, warn() {}, error() {} },
    retry: {
      retryAfterBaseValue: retryBase,
      ...(options.retries === undefined ? {} : { retries: options.retries }),
    },
    throttle: {
      retryAfterBaseValue: retryBase,
      onRateLimit: (after: number, request: { method: string; url: string }, _: unknown, count: number) => {
        log.warn("code host rate limit", {
          method: request.method,
          url: request.url,
          retryAfterSeconds: after,
        });
        return count < rateLimitRetries;
      },
      onSecondaryRateLimit: (
        after: number,
        request: { method: string; url: string },
        _: unknown,
        count: number,
      ) => {
        log.warn("code host secondary rate limit", {
          method: request.method,
          url: request.url,
          retryAfterSeconds: after,
        });
        return count < rateLimitRetries;
      },
    },
  };
  if ("token" in auth) return new Client({ ...common, auth: auth.token });
  if ("appId" in auth) {
    return new Client({
      ...common,
      authStrategy: createAppAuth,
      auth: { appId: auth.appId, privateKey: auth.privateKey, installationId: auth.installationId },
    });
  }
  return new Client(common);
}

/** Octokit's RequestError carries the status; the message is its own, with credentials redacted by it. */
export function requestStatus(error: unknown): number | undefined {
  if (error && typeof error === "object" && "status" in error && typeof error.status === "number")
    return error.status;
  return undefined;
}
