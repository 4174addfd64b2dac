// Controlled access to running work: authorization from git (AccessPolicy), the SSH bastion
// (shell, exec, SFTP, port forwarding through agent tunnels) and the audit trail.
export { AccessControl, AccessDenied, type ResolvedPod } from "./access-control.ts";
export { AuditLog, type AuditLogOptions, type AuditRecord, type AuditResult } from "./audit.ts";
export {
  ACCESS_VERBS,
  type AccessDecision,
  type AccessTarget,
  type AccessVerb,
  authorize,
  commandAllowed,
  execArgv,
  type Principal,
} from "./authorize.ts";
export { Bastion, type BastionOptions } from "./bastion.ts";
export { knownHostsLine } from "./known-hosts.ts";
export { type LoginName, type PodSelector, parseLoginName, parsePodSelector } from "./login-name.ts";
