// The two seams access paths (logs, proxies) take from outside: who may do what, and where a
// record of each access goes. Both are injected so authorization from git and the audit log can
// be wired in without these paths knowing how they work.
import type { Principal } from "../lib/http/index.ts";
import type { Logger } from "../lib/logger.ts";

export type AccessVerb = "logs" | "proxy";

/** What is reached: a pod on a cluster (its mirrored namespace `agent-<cluster>`), maybe one port. */
export interface AccessTarget {
  cluster: string;
  namespace: string;
  pod: string;
  container?: string;
  port?: number;
  /** The Job and Task the pod belongs to, for grants by Job label. */
  job?: string;
  task?: string;
}

export interface AccessDecision {
  allowed: boolean;
  reason: string;
}

export type AccessCheck = (principal: Principal, verb: AccessVerb, target: AccessTarget) => AccessDecision;

/**
 * Today's rule, until grants from git decide: every authenticated principal may read what the API
 * shows it, and the API shows every pod to every role (viewer included).
 */
export const authenticatedMayAccess: AccessCheck = (principal) => ({
  allowed: true,
  reason: `${principal.subject} is authenticated (${principal.role}); no per-target grants yet`,
});

/** One access, once it has ended. Never contents, tokens or passwords. */
export interface AuditRecord {
  actor: string;
  role: Principal["role"];
  verb: AccessVerb;
  target: AccessTarget;
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

export type AuditSink = (record: AuditRecord) => void;

/** Until the audit log exists: one structured line per access in the hub's log. */
export function loggingAuditSink(logger: Logger): AuditSink {
  return (record) => logger.info("access", { ...record });
}
