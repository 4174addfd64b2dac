import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { type Route, route, sendStatus } from "../lib/http/index.ts";
import { type Logger, silentLogger } from "../lib/logger.ts";
import { handleGitWebhook } from "./webhook.ts";
import { createWebhookIntake, replyWebhook, type WebhookIntake, webhookHeaders } from "./webhook-intake.ts";

export interface GitWebhookHttpOptions {
  /** The accepted secrets; a function is called per request, so a rotated secret file takes effect at once. */
  secrets: readonly string[] | (() => readonly string[] | Promise<readonly string[]>);
  repoUrl: string;
  branch: string;
  /** Called for a verified push to the tracked branch; typically `() => void watcher.trigger()`. */
  onTrigger: () => void;
  /** Body limits, budget and remembered deliveries; share one with the pull-request reviewer. */
  intake?: WebhookIntake;
  /**
   * Handlers of other events by name (`pull_request`: the reviewer's), given the request before
   * its body is read; every other event (push, ping) is this handler's.
   */
  byEvent?: Readonly<Record<string, RequestListener>>;
  logger?: Logger;
}

/**
 * `POST /hooks/git` as a node:http handler; the hub mounts it on its router. The one receiver of
 * webhooks: routed by the event header, so each body is read once, by the handler of its event.
 */
export function createGitWebhookHttpHandler(
  options: GitWebhookHttpOptions,
): (req: IncomingMessage, res: ServerResponse) => void {
  const intake = options.intake ?? createWebhookIntake();
  const log = options.logger ?? silentLogger;
  const secrets = typeof options.secrets === "function" ? options.secrets : () => options.secrets as string[];

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const received = await intake.receive(req, res, secrets);
    if (!received) return;
    const result = handleGitWebhook(
      { headers: req.headers, body: received.body },
      { secrets: received.secrets, repoUrl: options.repoUrl, branch: options.branch },
    );
    const { delivery } = received.signed;
    // Past the signature check (any 2xx): a delivery seen before is a replay and does nothing.
    if (result.status < 300 && delivery && !intake.firstDelivery(delivery)) {
      log.info("git webhook", { status: 200, message: "duplicate delivery", delivery });
      replyWebhook(res, 200, `duplicate delivery ${delivery}: nothing done`);
      return;
    }
    log.info("git webhook", { status: result.status, message: result.message, delivery });
    replyWebhook(res, result.status, result.message);
    if (result.trigger) options.onTrigger();
  }

  return (req, res) => {
    const event = webhookHeaders(req.headers)?.event;
    const other = event === undefined ? undefined : options.byEvent?.[event];
    if (other) return other(req, res);
    serve(req, res).catch((error: unknown) => {
      log.warn("git webhook failed", { error: error instanceof Error ? error.message : String(error) });
      if (!res.headersSent) replyWebhook(res, 500, "internal error");
    });
  };
}

const GIT_WEBHOOK_PATH = "/hooks/git";

/**
 * The webhook's route: anonymous, since each delivery proves itself with its HMAC signature
 * (the handler refuses what is not a signed POST); a 404 on a hub configured for none.
 */
export function gitWebhookRoute(handler: RequestListener | undefined): Route {
  return route({
    method: "*",
    path: GIT_WEBHOOK_PATH,
    role: "anonymous",
    handle({ req, res }) {
      if (!handler) return sendStatus(res, 404, "NotFound", "no webhook secret is configured on this hub");
      handler(req, res);
    },
  });
}
