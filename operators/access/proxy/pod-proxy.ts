// /api/v1/namespaces/<ns>/pods/<name>/proxy/<port>/<path>: one HTTP request to a pod's port, over
// a `proxy` stream to the pod's agent (which connects only to a port the pod itself listens on).
// One tunnel stream per request, the bodies streamed both ways with backpressure; the request body
// is capped, the pod must answer within a time limit, and the hub's credentials stay behind.

import { type IncomingMessage, request, type ServerResponse } from "node:http";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { type Clock, systemClock } from "../../lib/clock.ts";
import { type Principal, sendStatus } from "../../lib/http/index.ts";
import type { KubeObject, Store } from "../../lib/store/index.ts";
import type { TunnelServer } from "../../lib/tunnel/index.ts";
import { passAfter } from "../byte-rate.ts";
import {
  type AccessCheck,
  type AccessHold,
  type AuditOutcome,
  type AuditSink,
  type HttpAuditRecord,
  holdNothing,
  podAccessTarget,
  startAudit,
} from "../hooks.ts";
import { requestHeaders, responseHeaders } from "./headers.ts";
import { decodeBody, rewritable, rewriteRootPaths } from "./rewrite.ts";

export interface PodProxyRequest {
  principal: Principal;
  namespace: string;
  /** A pod, or a Task (object name), whose first ready pod is used. */
  kind: "pod" | "task";
  name: string;
  port: number;
  /** The path after the port, from its `/`, with the query. */
  path: string;
  /** Where the pod's root appears to the client (for Location and X-Forwarded-Prefix). */
  prefix: string;
  /** Move root-relative URLs in HTML and CSS answers under the prefix (rewrite.ts). */
  rewrite?: boolean;
}

export type PodProxyRoute = (
  request: PodProxyRequest,
  req: IncomingMessage,
  res: ServerResponse,
) => Promise<void>;

export interface PodProxyOptions {
  store: Store;
  tunnel: Pick<TunnelServer, "openStream">;
  authorize: AccessCheck;
  audit: AuditSink;
  /** Keeps a request under watch: it is cut when git no longer grants it (default: never). */
  hold?: AccessHold;
  /** Largest request body passed on. Default 16 MiB. */
  maxRequestBytes?: number;
  /** Largest HTML or CSS answer rewritten (as sent and decoded); a larger one is a 502. Default 16 MiB. */
  maxRewriteBytes?: number;
  /** How long the pod has to answer with headers. Default 30 s. */
  responseTimeoutMs?: number;
  clock?: Clock;
}

class TooLarge extends Error {}
/** The pod took the request and sent no answer in time: a gateway timeout, not a broken gateway. */
class NoAnswer extends Error {}

/** The whole of a response body, refused beyond `max` bytes. */
async function readAll(body: AsyncIterable<Buffer>, max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > max) throw new Error(`the pod's page is over ${max} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

type PodStatus = { phase?: string; containerStatuses?: { ready?: boolean }[] };

/** The Task's first pod by name that is Running with every container ready. */
export async function firstReadyPod(
  store: Store,
  namespace: string,
  task: string,
): Promise<KubeObject | undefined> {
  const { items } = await store.list("Pod", { namespace });
  return items
    .filter((p) => (p.spec as { task?: string } | undefined)?.task === task)
    .filter((p) => {
      const status = p.status as PodStatus | undefined;
      return status?.phase === "Running" && (status.containerStatuses ?? []).every((c) => c.ready === true);
    })
    .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))[0];
}

/** A request body of at most `max` bytes, each chunk held for the wait `take` gives (the user's byte rate). */
function limited(max: number, take: (n: number) => number): Transform & { bytes: number } {
  const t = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      t.bytes += chunk.length;
      if (t.bytes > max) done(new TooLarge(`the request body is over ${max} bytes`));
      else passAfter(done, chunk, take(chunk.length));
    },
  }) as Transform & { bytes: number };
  t.bytes = 0;
  return t;
}

export function podProxyRoute(options: PodProxyOptions): PodProxyRoute {
  const clock = options.clock ?? systemClock;
  const maxRequestBytes = options.maxRequestBytes ?? 16 * 1024 * 1024;
  const maxRewriteBytes = options.maxRewriteBytes ?? 16 * 1024 * 1024;
  const timeoutMs = options.responseTimeoutMs ?? 30_000;
  return async ({ principal, namespace, kind, name: asked, port, path, prefix, rewrite }, req, res) => {
    const pod =
      kind === "pod"
        ? await options.store.get("Pod", namespace, asked)
        : await firstReadyPod(options.store, namespace, asked);
    if (!pod)
      return sendStatus(
        res,
        404,
        "NotFound",
        kind === "pod"
          ? `pods "${asked}" not found in ${namespace}`
          : `task "${asked}" has no ready pod in ${namespace}`,
      );
    const name = pod.metadata.name;
    const target = podAccessTarget(namespace, pod, { port });
    const audit = startAudit(options.audit, clock, principal, "proxy", target);
    let status = 0;
    const record = (result: HttpAuditRecord["result"], rest: Partial<AuditOutcome> = {}) =>
      audit({
        bytesOut: 0,
        bytesIn: 0,
        result,
        detail: { method: req.method ?? "GET", status },
        ...rest,
      });
    const decision = await options.authorize(principal, "proxy", target);
    if (!decision.allowed) {
      status = decision.hidden ? 404 : 403;
      record("denied", { error: decision.reason });
      // Another team's pod is answered as one that does not exist (docs/teams.md#visibility).
      if (decision.hidden)
        return sendStatus(
          res,
          404,
          "NotFound",
          kind === "pod"
            ? `pods "${asked}" not found in ${namespace}`
            : `task "${asked}" has no ready pod in ${namespace}`,
        );
      return sendStatus(res, 403, "Forbidden", `proxy to ${namespace}/${name}:${port}: ${decision.reason}`);
    }
    let channel: Awaited<ReturnType<TunnelServer["openStream"]>>;
    try {
      channel = await options.tunnel.openStream(target.cluster, {
        purpose: "proxy",
        meta: { name, namespace: (pod.spec as { namespace?: string } | undefined)?.namespace ?? "", port },
      });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const refused = / could not open proxy: /.test(message);
      status = refused ? 502 : 503;
      record("error", { error: message });
      return sendStatus(res, status, refused ? "BadGateway" : "ServiceUnavailable", message);
    }
    let bytesOut = 0;
    let revoked: string | undefined;
    let cut = (_reason: string) => {};
    const held = await (options.hold ?? holdNothing)(principal, "proxy", target, (reason) => {
      revoked = reason;
      cut(reason);
      res.destroy();
    });
    const body = limited(maxRequestBytes, (n) => held.take("in", n));
    const upstream = request({
      method: req.method ?? "GET",
      path,
      headers: requestHeaders(req.headers, port, prefix),
      createConnection: () => channel,
    });
    // A request cut by a revocation fails like one the pod broke off.
    if (revoked !== undefined) upstream.destroy(new Error(revoked));
    cut = (reason) => upstream.destroy(new Error(reason));
    // The stream header was read in paused mode; the HTTP parser listens for 'data', which does
    // not restart a paused stream.
    upstream.once("socket", () => channel.resume());
    const answered = new Promise<void>((resolve, reject) => {
      // ssh2 channels have no setTimeout: a timer of our own bounds the wait for the answer. It
      // rejects first, since the destroyed channel only ever reports "socket hang up".
      const timer = setTimeout(() => {
        reject(
          new NoAnswer(
            `the pod did not answer within ${timeoutMs / 1000} s (the hub's proxy response timeout, --proxy-timeout)`,
          ),
        );
        upstream.destroy();
      }, timeoutMs);
      timer.unref();
      upstream.once("error", reject);
      upstream.once("response", (response) => {
        clearTimeout(timer);
        status = response.statusCode ?? 502;
        const headers = responseHeaders(response.headers, prefix);
        if (
          rewrite &&
          req.method !== "HEAD" &&
          status !== 204 &&
          status !== 304 &&
          rewritable(response.headers)
        ) {
          readAll(response, maxRewriteBytes)
            .then((raw) => decodeBody(raw, response.headers["content-encoding"], maxRewriteBytes))
            .then((decoded) => {
              const body = Buffer.from(rewriteRootPaths(decoded.toString("utf8"), prefix));
              delete headers["content-encoding"];
              headers["content-length"] = body.length;
              bytesOut = body.length;
              // Already in memory (bounded by maxRewriteBytes): counted against the rate, not held.
              held.take("out", body.length);
              res.writeHead(status, headers);
              res.end(body, resolve);
            })
            .catch(reject);
          return;
        }
        res.writeHead(status, headers);
        const counted = new Transform({
          transform(chunk: Buffer, _encoding, done) {
            bytesOut += chunk.length;
            passAfter(done, chunk, held.take("out", chunk.length));
          },
        });
        pipeline(response, counted, res).then(resolve, reject);
      });
    });
    try {
      await Promise.all([pipeline(req, body, upstream), answered]);
      record("ok", { bytesIn: body.bytes, bytesOut });
    } catch (error) {
      const message = revoked ?? (error instanceof Error ? error.message : String(error));
      upstream.destroy();
      if (!res.headersSent) {
        status = error instanceof TooLarge ? 413 : error instanceof NoAnswer ? 504 : 502;
        const reason =
          status === 413 ? "RequestEntityTooLarge" : status === 504 ? "GatewayTimeout" : "BadGateway";
        sendStatus(res, status, reason, message);
      } else res.destroy();
      record("error", { bytesIn: body.bytes, bytesOut, error: message });
    } finally {
      held.release();
      // See logs/log-route.ts: the channel is closed and drained, not waited for.
      channel.destroy();
      channel.resume();
    }
  };
}
