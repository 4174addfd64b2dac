// GET …/pods/<name>/log: one pod's output, streamed from its cluster's agent over the tunnel. The
// hub holds no log: bytes go from the agent's channel to the client through one pipeline, so a
// slow client slows the agent's reads (SSH channel windows carry the backpressure) instead of
// filling the hub's memory, and a client that goes away ends the read on the agent.

import type { ServerResponse } from "node:http";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { type Clock, systemClock } from "../../lib/clock.ts";
import { type Principal, sendStatus } from "../../lib/http/index.ts";
import type { Store } from "../../lib/store/index.ts";
import type { TunnelServer } from "../../lib/tunnel/index.ts";
import { passAfter } from "../byte-rate.ts";
import {
  type AccessCheck,
  type AccessHold,
  type AuditOutcome,
  type AuditSink,
  type HttpAccessTarget,
  type HttpAuditRecord,
  holdNothing,
  podAccessTarget,
  startAudit,
} from "../hooks.ts";
import { type LogQuery, LogQueryError, parseLogQuery } from "./log-query.ts";

export interface PodLogRequest {
  principal: Principal;
  namespace: string;
  name: string;
  params: URLSearchParams;
}

export type PodLogRoute = (request: PodLogRequest, res: ServerResponse) => Promise<void>;

export interface PodLogRouteOptions {
  store: Store;
  tunnel: Pick<TunnelServer, "openStream">;
  authorize: AccessCheck;
  audit: AuditSink;
  /** Keeps a stream under watch: it ends when git no longer grants it (default: never). */
  hold?: AccessHold;
  /** Open log streams one principal may hold at once (follows are long-lived). Default 8. */
  maxStreamsPerSubject?: number;
  clock?: Clock;
}

/** Counts what passes: bytes and newlines, for the audit record. */
/** Counts bytes and lines, and holds each chunk for the wait `take` gives (the user's byte rate). */
function counter(take: (n: number) => number): Transform & { bytes: number; lines: number } {
  const t = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      t.bytes += chunk.length;
      for (let i = chunk.indexOf(0x0a); i >= 0; i = chunk.indexOf(0x0a, i + 1)) t.lines++;
      passAfter(done, chunk, take(chunk.length));
    },
  }) as Transform & { bytes: number; lines: number };
  t.bytes = 0;
  t.lines = 0;
  return t;
}

function detailOf(query: LogQuery): Record<string, string | number | boolean> {
  const { container, limitBytes, sinceSeconds, ...rest } = query;
  return {
    ...rest,
    ...(container === undefined ? {} : { container }),
    ...(limitBytes === undefined ? {} : { limitBytes }),
    ...(sinceSeconds === undefined ? {} : { sinceSeconds }),
  };
}

export function podLogRoute(options: PodLogRouteOptions): PodLogRoute {
  const clock = options.clock ?? systemClock;
  const maxStreams = options.maxStreamsPerSubject ?? 8;
  const open = new Map<string, number>();
  return async ({ principal, namespace, name, params }, res) => {
    let query: LogQuery;
    try {
      query = parseLogQuery(params, clock.now());
    } catch (error) {
      if (error instanceof LogQueryError) return sendStatus(res, 400, "BadRequest", error.message);
      throw error;
    }
    const pod = await options.store.get("Pod", namespace, name);
    if (!pod) return sendStatus(res, 404, "NotFound", `pods "${name}" not found in ${namespace}`);
    const target = podAccessTarget(namespace, pod, query.container ? { container: query.container } : {});
    const audit = startAudit(options.audit, clock, principal, "logs", target);
    const record = (result: HttpAuditRecord["result"], rest: Partial<AuditOutcome> = {}) =>
      audit({
        bytesOut: 0,
        bytesIn: 0,
        result,
        detail: detailOf(query),
        ...rest,
      });
    const decision = await options.authorize(principal, "logs", target);
    if (!decision.allowed) {
      record("denied", { error: decision.reason });
      // Another team's pod is answered as one that does not exist (docs/teams.md#visibility).
      if (decision.hidden)
        return sendStatus(res, 404, "NotFound", `pods "${name}" not found in ${namespace}`);
      return sendStatus(res, 403, "Forbidden", `logs of ${namespace}/${name}: ${decision.reason}`);
    }
    const held = open.get(principal.subject) ?? 0;
    if (held >= maxStreams) {
      record("denied", { error: "too many open log streams" });
      return sendStatus(
        res,
        429,
        "TooManyRequests",
        `${principal.subject} already has ${held} log streams open`,
      );
    }
    open.set(principal.subject, held + 1);
    try {
      await stream(
        options,
        principal,
        pod.spec as { namespace?: string } | undefined,
        target,
        query,
        res,
        record,
      );
    } finally {
      const left = (open.get(principal.subject) ?? 1) - 1;
      if (left > 0) open.set(principal.subject, left);
      else open.delete(principal.subject);
    }
  };
}

async function stream(
  options: PodLogRouteOptions,
  principal: Principal,
  spec: { namespace?: string } | undefined,
  target: HttpAccessTarget,
  query: LogQuery,
  res: ServerResponse,
  record: (result: HttpAuditRecord["result"], rest?: Partial<AuditOutcome>) => void,
): Promise<void> {
  let channel: Awaited<ReturnType<TunnelServer["openStream"]>>;
  try {
    channel = await options.tunnel.openStream(target.cluster, {
      purpose: "logs",
      meta: { name: target.pod, namespace: spec?.namespace ?? "", ...query },
    });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    record("error", { error: message });
    // The agent refused the request itself (an option its runtime cannot serve): the request is
    // at fault. Otherwise the pod's cluster is away.
    const refused = / could not open logs: /.test(message);
    return sendStatus(res, refused ? 400 : 503, refused ? "BadRequest" : "ServiceUnavailable", message);
  }
  res.writeHead(200, {
    "content-type": "text/plain; charset=utf-8",
    "cache-control": "no-store",
    // Proxies in front of the hub must pass a follow through as it comes.
    "x-accel-buffering": "no",
  });
  res.flushHeaders();
  // The response's close is the end of the access: a snapshot finished, or a client that left (how
  // a follow ends). The pipeline's own promise is not waited for: an ssh2 channel the hub closes
  // emits nothing more once the agent has gone, though the agent does stop reading at once.
  const closed = new Promise<void>((resolve) => res.once("close", resolve));
  let failure: unknown;
  // Cut, not ended: the client must not take a revoked follow for the end of the log.
  let revoked: string | undefined;
  const held = await (options.hold ?? holdNothing)(principal, "logs", target, (reason) => {
    revoked = reason;
    res.destroy();
  });
  const counted = counter((n) => held.take("out", n));
  pipeline(channel, counted, res).catch((error: unknown) => {
    failure = error;
  });
  await closed;
  held.release();
  if (!res.writableFinished) {
    channel.destroy();
    channel.resume();
  }
  // The client leaving (a premature close) is how a follow ends, not a failure.
  const broken =
    failure !== undefined && (failure as NodeJS.ErrnoException).code !== "ERR_STREAM_PREMATURE_CLOSE";
  const error =
    revoked ?? (broken ? (failure instanceof Error ? failure.message : String(failure)) : undefined);
  record(error === undefined ? "ok" : "error", {
    bytesOut: counted.bytes,
    lines: counted.lines,
    ...(error === undefined ? {} : { error }),
  });
}
