// Access to running work: what the hub wires from here (logs now; proxies, the bastion and audit
// join it).
export {
  type AccessCheck,
  type AccessDecision,
  type AccessTarget,
  type AccessVerb,
  type AuditRecord,
  type AuditSink,
  authenticatedMayAccess,
  loggingAuditSink,
} from "./hooks.ts";
export { type PodLogRequest, type PodLogRoute, podLogRoute } from "./logs/log-route.ts";
export { type PodProxyRequest, type PodProxyRoute, podProxyRoute } from "./proxy/pod-proxy.ts";
