// Dashboard login and sessions: scrypt password hashes from git Users, HS256 JWTs signed with a
// per-hub secret in the data dir, rate-limited login. See docs/dashboard.md.
export { type SessionClaims, signJwt, verifyJwt } from "./jwt.ts";
export { JWT_SECRET_FILE, loadOrCreateJwtSecret } from "./jwt-secret.ts";
export { type LoginLimit, sourceKey } from "./login-limits.ts";
export { createLoginLinks, LOGIN_LINK_PATH, LOGIN_LINK_TTL_MS, type LoginLinks } from "./login-link.ts";
export {
  DEFAULT_SCRYPT,
  hashPassword,
  parsePasswordHash,
  type ScryptParameters,
  verifyPassword,
} from "./password-hash.ts";
export { createRateLimiter, type RateLimiter } from "./rate-limiter.ts";
export {
  ADMIN_TOKEN_SUBJECT,
  createSessions,
  highestRole,
  LOGIN_PATH,
  type LoginResponse,
  type Sessions,
  type SessionsOptions,
} from "./sessions.ts";
