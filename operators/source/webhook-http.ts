import type { IncomingMessage, ServerResponse } from "node:http";
import type { GitLogger } from "./git-clock.ts";
import { silentLogger } from "./git-clock.ts";
import { handleGitWebhook } from "./webhook.ts";

export interface GitWebhookHttpOptions {
  /** The accepted secrets; a function is called per request, so a rotated secret file takes effect at once. */
  secrets: readonly string[] | (() => readonly string[] | Promise<readonly string[]>);
  repoUrl: string;
  branch: string;
  /** Called for a verified push to the tracked branch; typically `() => void watcher.trigger()`. */
  onTrigger: () => void;
  /** Larger bodies are refused with 413; GitHub caps payloads at 25 MB. */
  maxBodyBytes?: number;
  logger?: GitLogger;
}

function reply(res: ServerResponse, status: number, message: string): void {
  if (status === 204) {
    res.writeHead(204).end();
    return;
  }
  const body = JSON.stringify({ message });
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

/** `POST /hooks/git` as a node:http handler; the hub mounts it on its router. */
export function createGitWebhookHttpHandler(
  options: GitWebhookHttpOptions,
): (req: IncomingMessage, res: ServerResponse) => void {
  const limit = options.maxBodyBytes ?? 25 * 1024 * 1024;
  const log = options.logger ?? silentLogger;
  return (req, res) => {
    if (req.method !== "POST") {
      res.setHeader("allow", "POST");
      reply(res, 405, "use POST");
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let refused = false;
    req.on("data", (chunk: Buffer) => {
      if (refused) return;
      size += chunk.length;
      if (size > limit) {
        refused = true;
        reply(res, 413, `payload larger than ${limit} bytes`);
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on("error", () => {
      if (!res.headersSent) reply(res, 400, "request aborted");
    });
    req.on("end", () => {
      if (refused) return;
      void (async () => {
        try {
          const result = await handleGitWebhook(
            { headers: req.headers, body: Buffer.concat(chunks) },
            {
              secrets: typeof options.secrets === "function" ? await options.secrets() : options.secrets,
              repoUrl: options.repoUrl,
              branch: options.branch,
            },
          );
          log.info("git webhook", {
            status: result.status,
            message: result.message,
            delivery: req.headers["x-github-delivery"] ?? req.headers["x-gitea-delivery"],
          });
          reply(res, result.status, result.message);
          if (result.trigger) options.onTrigger();
        } catch (error) {
          log.warn("git webhook failed", { error: error instanceof Error ? error.message : String(error) });
          if (!res.headersSent) reply(res, 500, "internal error");
        }
      })();
    });
  };
}
