// What /hooks/git does before a webhook's meaning is looked at, shared by the push handler and
// the pull-request reviewer: which host signed it (from headers alone), the HMAC check, reading
// the body within bounds, and remembering deliveries so a replay does nothing.
//
// Anyone can POST here, so nothing is read before the headers show a signed request from a known
// host and a secret is configured to check it against. Bodies are read into one byte budget shared
// by every request in flight (a declared Content-Length is reserved up front, a chunked body as it
// arrives; over the budget is 503 at once), each within a body timeout: an unauthenticated client
// holds at most the budget, and only for that long.
import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";

export type WebhookProvider = "github" | "gitea";
export type WebhookHeaderMap = Readonly<Record<string, string | readonly string[] | undefined>>;

export interface SignedWebhookHeaders {
  provider: WebhookProvider;
  /** X-GitHub-Event / X-Gitea-Event (or Forgejo's, Gogs'). */
  event: string;
  /** The signature as sent, or undefined when it is missing. */
  signature: string | undefined;
  /** The header a person should look at when the signature is missing or wrong. */
  signatureHeader: "X-Hub-Signature-256" | "X-Gitea-Signature";
  /** X-GitHub-Delivery / X-Gitea-Delivery; "" when the host sent none. */
  delivery: string;
}

export const NOT_A_WEBHOOK = "not a GitHub or Gitea webhook (no X-GitHub-Event or X-Gitea-Event)";
export const NO_SECRET = "no webhook secret is configured; refusing unsigned webhooks";

function header(headers: WebhookHeaderMap, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name) continue;
    const first = Array.isArray(value) ? value[0] : value;
    return typeof first === "string" && first !== "" ? first : undefined;
  }
  return undefined;
}

function firstHeader(headers: WebhookHeaderMap, names: readonly string[]): string | undefined {
  for (const name of names) {
    const value = header(headers, name);
    if (value !== undefined) return value;
  }
  return undefined;
}

/** Which host sent a webhook and how it is signed, from its headers; undefined for anything else. */
export function webhookHeaders(headers: WebhookHeaderMap): SignedWebhookHeaders | undefined {
  const delivery =
    firstHeader(headers, [
      "x-github-delivery",
      "x-gitea-delivery",
      "x-forgejo-delivery",
      "x-gogs-delivery",
    ]) ?? "";
  const gitea = firstHeader(headers, ["x-gitea-event", "x-forgejo-event", "x-gogs-event"]);
  if (gitea) {
    return {
      provider: "gitea",
      event: gitea,
      // Gitea also sends GitHub's header; which one arrives depends on the version.
      signature: firstHeader(headers, [
        "x-gitea-signature",
        "x-forgejo-signature",
        "x-gogs-signature",
        "x-hub-signature-256",
      ]),
      signatureHeader: "X-Gitea-Signature",
      delivery,
    };
  }
  const github = header(headers, "x-github-event");
  if (!github) return undefined;
  return {
    provider: "github",
    event: github,
    signature: header(headers, "x-hub-signature-256"),
    signatureHeader: "X-Hub-Signature-256",
    delivery,
  };
}

/**
 * True when the body is signed with one of the secrets: hex HMAC-SHA256 of the raw bytes, with
 * GitHub's `sha256=` prefix (optional for Gitea). Every secret is tried, with no early exit, so the
 * time taken does not tell which one matched.
 */
export function webhookSignatureValid(
  signed: SignedWebhookHeaders,
  secrets: readonly string[],
  body: Buffer,
): boolean {
  const sent = signed.signature?.trim() ?? "";
  if (signed.provider === "github" && !sent.startsWith("sha256=")) return false;
  const given = Buffer.from(sent.replace(/^sha256=/, ""), "utf8");
  let valid = false;
  for (const secret of secrets) {
    if (secret === "") continue;
    const expected = Buffer.from(createHmac("sha256", secret).update(body).digest("hex"), "utf8");
    if (expected.length === given.length && timingSafeEqual(expected, given)) valid = true;
  }
  return valid;
}

/** A webhook past its one check, or the answer it gets instead. */
export type WebhookCheck = { signed: SignedWebhookHeaders } | { status: 204 | 400 | 401; message: string };

/**
 * The one check of a webhook, for push and pull_request alike, before its body is parsed: a
 * GitHub or Gitea event, signed with one of the secrets. A verified ping is answered here.
 */
export function verifyWebhook(
  request: { headers: WebhookHeaderMap; body: Buffer },
  secrets: readonly string[],
): WebhookCheck {
  const signed = webhookHeaders(request.headers);
  if (!signed) return { status: 400, message: NOT_A_WEBHOOK };
  const accepted = secrets.filter((s) => s !== "");
  if (accepted.length === 0) return { status: 401, message: NO_SECRET };
  if (!signed.signature) return { status: 401, message: `missing ${signed.signatureHeader}` };
  if (!webhookSignatureValid(signed, accepted, request.body))
    return { status: 401, message: `${signed.signatureHeader} does not match` };
  if (signed.event === "ping") return { status: 204, message: "pong" };
  return { signed };
}

/** Answers a webhook with `{message}` (204 has no body). */
export function replyWebhook(
  res: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  if (status === 204) {
    res.writeHead(204, headers).end();
    return;
  }
  const body = JSON.stringify({ message });
  res.writeHead(status, {
    ...headers,
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(body)),
  });
  res.end(body);
}

export interface WebhookIntakeOptions {
  /** Larger bodies are refused with 413; GitHub caps payloads at 25 MB. */
  maxBodyBytes?: number;
  /** Bytes of bodies held at once across every request; default 32 MiB. */
  budgetBytes?: number;
  /** A body must arrive within this long of its headers; default 10 s. */
  bodyTimeoutMs?: number;
  /** Delivery ids remembered to refuse replays; default 4096. */
  deliveriesKept?: number;
}

export interface ReceivedWebhook {
  signed: SignedWebhookHeaders;
  /** The secrets configured when the request came, none empty. */
  secrets: readonly string[];
  body: Buffer;
}

export interface WebhookIntake {
  /**
   * Refuses what its headers already disqualify, then reads the body within the budget and the
   * timeout. Undefined when it has answered the request itself. Does not check the signature:
   * the handler does, with what it parses.
   */
  receive(
    req: IncomingMessage,
    res: ServerResponse,
    secrets: () => readonly string[] | Promise<readonly string[]>,
  ): Promise<ReceivedWebhook | undefined>;
  /**
   * Records a delivery whose signature was verified; false when it was recorded before (a replay).
   * Only verified ids are recorded, so a forged request cannot spoil a genuine one's id.
   */
  firstDelivery(id: string): boolean;
  /** Bytes reserved by bodies being read now. */
  inFlightBytes(): number;
}

/** Refuses a request whose body is not read: the connection closes instead of draining it. */
function refuse(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}) {
  res.shouldKeepAlive = false;
  replyWebhook(res, status, message, { ...headers, connection: "close" });
}

export function createWebhookIntake(options: WebhookIntakeOptions = {}): WebhookIntake {
  const maxBody = options.maxBodyBytes ?? 25 * 1024 * 1024;
  const budget = options.budgetBytes ?? 32 * 1024 * 1024;
  const timeoutMs = options.bodyTimeoutMs ?? 10_000;
  const kept = options.deliveriesKept ?? 4096;
  let inFlight = 0;
  // Insertion order is age: a hit moves an id to the end, the oldest is dropped first.
  const deliveries = new Map<string, true>();

  function readBody(req: IncomingMessage, res: ServerResponse): Promise<Buffer | undefined> {
    const declared =
      req.headers["content-length"] === undefined ? undefined : Number(req.headers["content-length"]);
    if (declared !== undefined && declared > maxBody) {
      refuse(res, 413, `payload larger than ${maxBody} bytes`);
      return Promise.resolve(undefined);
    }
    const busy = () =>
      refuse(res, 503, "too many webhook bodies in flight; try again shortly", { "retry-after": "10" });
    if (declared !== undefined && inFlight + declared > budget) {
      busy();
      return Promise.resolve(undefined);
    }
    let reserved = declared ?? 0;
    inFlight += reserved;
    return new Promise((resolve) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let done = false;
      const finish = (body: Buffer | undefined) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        inFlight -= reserved;
        reserved = 0;
        chunks.length = 0;
        req.off("data", onData);
        req.off("end", onEnd);
        resolve(body);
      };
      /** Answers, stops reading and closes the connection once the answer is out. */
      const stop = (status: number, message: string, headers: Record<string, string> = {}) => {
        finish(undefined);
        if (!res.headersSent) refuse(res, status, message, headers);
        req.pause();
        res.once("finish", () => req.socket.destroy());
      };
      const timer = setTimeout(
        () => stop(408, `the body did not arrive within ${Math.round(timeoutMs / 1000)} s`),
        timeoutMs,
      );
      const onData = (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBody) return stop(413, `payload larger than ${maxBody} bytes`);
        if (size > reserved) {
          const more = size - reserved;
          if (inFlight + more > budget)
            return stop(503, "too many webhook bodies in flight; try again shortly", { "retry-after": "10" });
          inFlight += more;
          reserved += more;
        }
        chunks.push(chunk);
      };
      const onEnd = () => finish(Buffer.concat(chunks));
      req.on("data", onData);
      req.on("end", onEnd);
      // A client that goes away releases its share at once.
      req.once("close", () => finish(undefined));
      req.once("error", () => finish(undefined));
    });
  }

  return {
    async receive(req, res, secrets) {
      if (req.method !== "POST") {
        refuse(res, 405, "use POST", { allow: "POST" });
        return undefined;
      }
      const signed = webhookHeaders(req.headers);
      if (!signed) {
        refuse(res, 400, NOT_A_WEBHOOK);
        return undefined;
      }
      if (!signed.signature) {
        refuse(res, 401, `missing ${signed.signatureHeader}`);
        return undefined;
      }
      const accepted = (await secrets()).filter((s) => s !== "");
      if (accepted.length === 0) {
        refuse(res, 401, NO_SECRET);
        return undefined;
      }
      const body = await readBody(req, res);
      return body ? { signed, secrets: accepted, body } : undefined;
    },
    firstDelivery(id) {
      const seen = deliveries.delete(id);
      deliveries.set(id, true);
      if (deliveries.size > kept) {
        const oldest = deliveries.keys().next().value;
        if (oldest !== undefined) deliveries.delete(oldest);
      }
      return !seen;
    },
    inFlightBytes: () => inFlight,
  };
}
