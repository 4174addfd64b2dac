// Controlled access to running work: authorization from git (AccessPolicy), the SSH bastion
// (shell, exec, SFTP, port forwarding through agent tunnels), pod logs and HTTP proxies over the
// hub's API, and the audit trail.
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
  VERB_ROLES,
} from "./authorize.ts";
export { Bastion, type BastionOptions } from "./bastion.ts";
export {
  type AccessCheck,
  type AccessHold,
  type AuditSink,
  authenticatedMayAccess,
  type HttpAccessTarget,
  type HttpAuditRecord,
  holdNothing,
  loggingAuditSink,
} from "./hooks.ts";
export { httpAccessCheck, httpAccessHold, httpAuditSink } from "./http-access.ts";
export { knownHostsLine } from "./known-hosts.ts";
export { type LoginName, type PodSelector, parseLoginName, parsePodSelector } from "./login-name.ts";
export { type PodLogRequest, type PodLogRoute, podLogRoute } from "./logs/log-route.ts";
// Cookie parsing at the pod proxy, entered by hack/fuzz.
export { podCookies, podSetCookie } from "./proxy/headers.ts";
export { type PodProxyRequest, type PodProxyRoute, podProxyRoute } from "./proxy/pod-proxy.ts";
export {
  cookieValues,
  createProxyLogin,
  PROXY_COOKIE,
  PROXY_LOGIN_PATH,
  type ProxyLogin,
  type ProxyLoginOptions,
} from "./proxy/proxy-login.ts";
export { type WebSocketProxyOptions, webSocketProxyRoute } from "./proxy/websocket-proxy.ts";
export { type AccessRoutesOptions, accessRoutes } from "./routes.ts";
export {
  AccessSessions,
  type AccessSessionsOptions,
  type AccessVia,
  type LiveAccess,
  type Requester,
  type SessionControl,
  type SessionSink,
} from "./sessions.ts";
export {
  type TensorBoardRoute,
  tensorBoardRoute,
  tensorBoardTarget,
} from "./tensorboard/tensorboard-route.ts";
export { TERMINAL_PROTOCOL, type WebTerminalOptions, webTerminalRoute } from "./terminal/web-terminal.ts";
