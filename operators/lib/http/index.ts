// What every HTTP surface of the hub shares: bearer-token authentication, the admin token kept in
// the data dir, Kubernetes-shaped JSON answers, the redaction of secret fields, and the one
// authenticated entrance for WebSocket upgrades; and the route table every request goes through.
export { ADMIN_TOKEN_FILE, loadOrCreateAdminToken } from "./admin-token.ts";
export { type Authenticator, adminTokenAuthenticator, anyOf, bearerToken, type Principal } from "./auth.ts";
export { readJsonObject } from "./json-body.ts";
export { hubOrigins, type OriginCheck, originCheck, publicOrigin } from "./origin.ts";
export { redact } from "./redact.ts";
export { sendJson, sendStatus } from "./respond.ts";
export {
  createRouter,
  type Method,
  methodsOf,
  type Role,
  type Route,
  route,
  shownPath,
} from "./router.ts";
export {
  DEFAULT_HTTP_LIMITS,
  type HttpServerLimits,
  httpServerLimits,
  limitConnections,
  serverOptions,
} from "./server-limits.ts";
export {
  createUpgradeHandler,
  offeredProtocols,
  refuseUpgrade,
  requestedProtocols,
  TOKEN_PROTOCOL_PREFIX,
  type UpgradeOptions,
  type UpgradeRequest,
  type UpgradeRoute,
} from "./upgrade.ts";
