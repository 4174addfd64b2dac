// The two seams access paths (logs, proxies) take from outside: who may do what, and where a
// record of each access goes. Both are injected so authorization from git and the audit log can
// be wired in without these paths knowing how they work.
import { clusterOf, JOB_LABEL, TASK_LABEL } from "../api/index.ts";
import type { Clock } from "../lib/clock.ts";
import type { Principal } from "../lib/http/index.ts";
import type { Logger } from "../lib/logger.ts";
import type { AccessDecision } from "./authorize.ts";

/** The verbs served over the hub's HTTP API (the bastion serves the others). */
export type HttpAccessVerb = "logs" | "proxy";

/** What is reached: a pod on a cluster (its mirrored namespace `agent-<cluster>`), maybe one port. */
export interface HttpAccessTarget {
  cluster: string;
  namespace: string;
  pod: string;
  container?: string;
  port?: number;
  /** The Job and Task the pod belongs to, for grants by Job label. */
  job?: string;
  task?: string;
}

/** A pod mirrored in `namespace` (agent-<cluster>) as a target: its Job and Task from its labels. */
export function podAccessTarget(
  namespace: string,
  pod: { metadata: { name: string; labels?: Record<string, string> } },
  reach: { container?: string; port?: number } = {},
): HttpAccessTarget {
  const labels = pod.metadata.labels ?? {};
  return {
    cluster: clusterOf(namespace) ?? "",
    namespace,
    pod: pod.metadata.name,
    ...(reach.container ? { container: reach.container } : {}),
    ...(reach.port !== undefined ? { port: reach.port } : {}),
    ...(labels[JOB_LABEL] ? { job: labels[JOB_LABEL] } : {}),
    ...(labels[TASK_LABEL] ? { task: labels[TASK_LABEL] } : {}),
  };
}

export type AccessCheck = (
  principal: Principal,
  verb: HttpAccessVerb,
  target: HttpAccessTarget,
) => AccessDecision | Promise<AccessDecision>;

/**
 * Today's rule, until grants from git decide: every authenticated principal may read what the API
 * shows it, and the API shows every pod to every role (viewer included).
 */
export const authenticatedMayAccess: AccessCheck = (principal) => ({
  allowed: true,
  reason: `${principal.subject} is authenticated (${principal.role}); no per-target grants yet`,
});

/** An open access under watch, as its route sees it. */
export interface HeldAccess {
  /** The access is over. */
  release(): void;
  /**
   * Bytes just moved to the client (out) or from it (in); milliseconds to hold that direction
   * before moving more (the user's byte rate; 0: carry on).
   */
  take(direction: "in" | "out", n: number): number;
}

/**
 * Keeps an open access (a log follow, a proxied connection, a terminal) under watch while it
 * lasts: `end` is called, with why, once git no longer grants it.
 */
export type AccessHold = (
  principal: Principal,
  verb: HttpAccessVerb,
  target: HttpAccessTarget,
  end: (reason: string) => void,
) => Promise<HeldAccess>;

/** Holds nothing back: nothing is revoked, no rate applies. */
export const notHeld: HeldAccess = { release: () => {}, take: () => 0 };

/** For a hub without grants from git: nothing is ever revoked. */
export const holdNothing: AccessHold = async () => notHeld;

/** One access, once it has ended. Never contents, tokens or passwords. */
export interface HttpAuditRecord {
  actor: string;
  role: Principal["role"];
  verb: HttpAccessVerb;
  target: HttpAccessTarget;
  /** ISO times. */
  start: string;
  end: string;
  /** Bytes sent to the client, and received from it (a proxied request's body). */
  bytesOut: number;
  bytesIn: number;
  /** Lines sent (logs). */
  lines?: number;
  result: "ok" | "denied" | "error";
  error?: string;
  /** What was asked (the log options, a proxied method and status), without contents. */
  detail?: Record<string, string | number | boolean>;
}

export type AuditSink = (record: HttpAuditRecord) => void;

/** What a route says about one access when it ends; the rest is the same for each route. */
export type AuditOutcome = Omit<HttpAuditRecord, "actor" | "role" | "verb" | "target" | "start" | "end">;

/**
 * The audit of one access that starts now: who, which verb on what and since when are fixed
 * here, the end is the time the outcome is written. Each route then records only its outcome.
 */
export function startAudit(
  sink: AuditSink,
  clock: Clock,
  principal: Principal,
  verb: HttpAccessVerb,
  target: HttpAccessTarget,
): (outcome: AuditOutcome) => void {
  const start = new Date(clock.now()).toISOString();
  return (outcome) =>
    sink({
      actor: principal.subject,
      role: principal.role,
      verb,
      target,
      start,
      end: new Date(clock.now()).toISOString(),
      ...outcome,
    });
}

/** Until the audit log exists: one structured line per access in the hub's log. */
export function loggingAuditSink(logger: Logger): AuditSink {
  return (record) => logger.info("access", { ...record });
}
