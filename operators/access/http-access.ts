// The hub API's access paths (pod logs, HTTP proxies) under the same rules as the bastion: the
// AccessPolicies git holds now decide, and each access lands in the one audit log.
import type { AccessControl } from "./access-control.ts";
import type { AuditLog } from "./audit.ts";
import { type AccessCheck, type AccessHold, type AuditSink, type HttpAuditRecord, notHeld } from "./hooks.ts";
import type { AccessSessions } from "./sessions.ts";

/** The hub's own admin token (lib/http/auth.ts): the operator's key to the hub, not a person in git. */
const ADMIN_TOKEN_SUBJECT = "admin-token";

/**
 * AccessPolicies decide for people (a User in git, by name and roles); the admin token may do
 * everything, as it may on every other route of the API. With `sessions`, a user at the session
 * limit is refused here, in words (the hold takes the place itself, and cuts what a burst let by).
 */
export function httpAccessCheck(control: AccessControl, sessions?: AccessSessions): AccessCheck {
  return async (principal, verb, target) => {
    if (principal.subject === ADMIN_TOKEN_SUBJECT && principal.role === "admin")
      return { allowed: true, reason: "the hub's admin token" };
    const full = sessions?.full(principal.subject);
    if (full) return { allowed: false, reason: full };
    const resolved = await control.mirroredTarget(target.namespace, target.pod);
    if (!resolved) return { allowed: false, reason: `no pod ${target.namespace}/${target.pod}` };
    return control.decide(principal.subject, verb, resolved);
  };
}

/**
 * Holds the API's open accesses in the session service's one set, so a User, role or
 * AccessPolicy removed in git ends them as it ends SSH sessions (each route audits its own),
 * their bytes count against the user's byte rate with the SSH sessions', each takes one of the
 * user's places under the session limit, and a proxied request or WebSocket with no bytes either
 * way for the idle timeout is cut (a log follow is quiet when its pod is: it never idles out).
 */
export function httpAccessHold(sessions: AccessSessions): AccessHold {
  return async (principal, verb, target, end) => {
    if (principal.subject === ADMIN_TOKEN_SUBJECT && principal.role === "admin") return notHeld;
    // Taken before any await: a burst of requests cannot all pass the count.
    const slot = sessions.reserve(principal.subject);
    if ("denied" in slot) {
      end(slot.denied);
      return notHeld;
    }
    const resolved = await sessions.access.mirroredTarget(target.namespace, target.pod);
    if (!resolved) {
      slot.release();
      end(`no pod ${target.namespace}/${target.pod}`);
      return notHeld;
    }
    const live = sessions.track(
      { user: principal.subject, ip: "", via: "http" },
      verb,
      resolved,
      (_result, error) => end(error),
      { idles: verb === "proxy", audited: false, slot },
    );
    return { release: () => live.end("ok"), take: (direction, n) => live.count(direction, n) };
  };
}

/** Writes the API's access records into the bastion's audit log (via "http"). */
export function httpAuditSink(log: AuditLog): AuditSink {
  return (record: HttpAuditRecord) => {
    const { cluster, namespace, pod, container, port } = record.target;
    log.write({
      actor: record.actor,
      verb: record.verb,
      target: `${cluster}/${namespace}/${pod}${container ? `/${container}` : ""}${port ? `:${port}` : ""}`,
      via: "http",
      start: record.start,
      end: record.end,
      bytesIn: record.bytesIn,
      bytesOut: record.bytesOut,
      result: record.result,
      ...(record.error ? { error: record.error } : {}),
    });
  };
}
