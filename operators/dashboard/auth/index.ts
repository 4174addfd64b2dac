// Dashboard login and sessions: scrypt password hashes from git Users, HS256 JWTs signed with a
// per-hub secret in the data dir, rate-limited login. See docs/dashboard.md.
export { signJwt, verifyJwt } from "./jwt.ts";
export { loadOrCreateJwtSecret } from "./jwt-secret.ts";
export { DEFAULT_SCRYPT, hashPassword, parsePasswordHash, verifyPassword } from "./password-hash.ts";
export { createRateLimiter } from "./rate-limiter.ts";
export { createSessions, highestRole, LOGIN_PATH } from "./sessions.ts";
