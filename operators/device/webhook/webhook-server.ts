// The mutating admission webhook over HTTPS: POST /mutate takes an AdmissionReview v1 and answers
// with the devinit patch; GET /healthz answers ok. Bodies are bounded (kube-apiserver never sends
// more than its 3 MiB request limit). The answer is a pure function of the request body and has
// no side effects, so it reveals nothing a caller did not send: kube-apiserver does not present a
// client certificate to webhooks unless configured to, and none is required (docs/devices.md).

import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { type Clock, systemClock } from "../../lib/clock.ts";
import type { Logger } from "../../lib/logger.ts";
import type { CertificateAuthority } from "../../lib/pki/index.ts";
import { answerReview, BadReviewError } from "./admission-review.ts";
import type { DevinitSettings } from "./mutate.ts";
import { issueServingCert, renewServingCert } from "./serving-cert.ts";

const MAX_BODY = 3 * 1024 * 1024;
const DAY = 24 * 60 * 60 * 1000;

export interface DeviceWebhookOptions {
  host: string;
  port: number;
  ca: CertificateAuthority;
  /** Names the serving certificate is valid for (the Service's DNS names, or an IP). */
  serverNames: string[];
  devinit: DevinitSettings;
  /** Serving certificate lifetime; default 30 days. */
  certTtlMs?: number;
  logger: Logger;
  clock?: Clock;
}

export interface DeviceWebhook {
  /** https://host:port */
  url: string;
  /** PEM of the CA kube-apiserver must trust (the caBundle). */
  caPem: string;
  stop(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY) {
        reject(new BadReviewError(`the body is larger than ${MAX_BODY} bytes`));
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function send(res: ServerResponse, status: number, body: string, type = "text/plain"): void {
  res.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(body) });
  res.end(body);
}

export async function startDeviceWebhook(options: DeviceWebhookOptions): Promise<DeviceWebhook> {
  const clock = options.clock ?? systemClock;
  const ttl = options.certTtlMs ?? 30 * DAY;
  const issue = () => issueServingCert(options.ca, options.serverNames, ttl);
  const first = issue();
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "https://webhook");
    if (req.method === "GET" && url.pathname === "/healthz") return send(res, 200, "ok\n");
    if (url.pathname !== "/mutate") return send(res, 404, "not found\n");
    if (req.method !== "POST") return send(res, 405, "POST an AdmissionReview\n");
    try {
      const answer = answerReview(JSON.parse(await readBody(req)), options.devinit);
      send(res, 200, JSON.stringify(answer), "application/json");
    } catch (error) {
      const bad = error instanceof BadReviewError || error instanceof SyntaxError;
      if (!bad) options.logger.error("mutating failed", { error: (error as Error).message });
      send(res, bad ? 400 : 500, `${bad ? (error as Error).message : "internal error"}\n`);
    }
  };
  const server: Server = createServer(
    { key: first.key, cert: first.cert },
    (req, res) => void handle(req, res),
  );
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const stopRenewal = renewServingCert(server, first, issue, clock, (error) =>
    options.logger.error("renewing the serving certificate failed", { error: error.message }),
  );
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  return {
    url: `https://${host}:${port}`,
    caPem: options.ca.certPem,
    async stop() {
      stopRenewal();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
