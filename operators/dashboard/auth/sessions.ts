// Dashboard sessions (seed 000 §15): POST /api/v1/auth/login with a User's name and password from
// git, or with the hub's admin token, answers a short-lived HS256 JWT; the authenticator turns such
// a token back into a principal on every /api request.

import type { IncomingMessage, ServerResponse } from "node:http";
import type { User } from "../../api/index.ts";
import { type Clock, systemClock } from "../../lib/clock.ts";
import {
  type Authenticator,
  type Principal,
  readJsonObject,
  sendJson,
  sendStatus,
} from "../../lib/http/index.ts";
import type { Store } from "../../lib/store/index.ts";
import { signJwt, verifyJwt } from "./jwt.ts";
import { createLoginLimits, DEFAULT_LOGIN_LIMIT, type LoginLimit } from "./login-limits.ts";
import { dummyPasswordHash, verifyPassword } from "./password-hash.ts";

export const LOGIN_PATH = "/api/v1/auth/login";
/** The subject of sessions opened with the admin token; a colon keeps it apart from every User name. */
export const ADMIN_TOKEN_SUBJECT = "rlark:admin-token";
const ROLE_ORDER: readonly Principal["role"][] = ["viewer", "user", "admin"];
const MAX_BODY = 4096;

export interface SessionsOptions {
  store: Store;
  /** Recognises the hub's admin token, which a login may present instead of a User's password. */
  adminToken: Authenticator;
  secret: Buffer;
  /** Default 30 minutes. */
  ttlSeconds?: number;
  /** Failed logins allowed per client address and per login name within a window (login-limits.ts). */
  limit?: LoginLimit;
  clock?: Clock;
}

export interface LoginResponse {
  token: string;
  subject: string;
  role: Principal["role"];
  /** ISO 8601. */
  expiresAt: string;
}

export interface Sessions {
  /** POST /api/v1/auth/login. */
  handleLogin(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** Verifies session JWTs; the User must still exist in git, with its current roles. */
  authenticator: Authenticator;
}

export function highestRole(roles: readonly string[] | undefined): Principal["role"] | undefined {
  let best = -1;
  for (const role of roles ?? []) best = Math.max(best, ROLE_ORDER.indexOf(role as Principal["role"]));
  return best < 0 ? undefined : ROLE_ORDER[best];
}

export function createSessions(options: SessionsOptions): Sessions {
  const clock = options.clock ?? systemClock;
  const ttl = options.ttlSeconds ?? 30 * 60;
  const limits = createLoginLimits(options.limit ?? DEFAULT_LOGIN_LIMIT, clock);

  async function check(
    body: Record<string, unknown>,
  ): Promise<{ subject: string; role: Principal["role"] } | undefined> {
    if (typeof body.adminToken === "string") {
      const principal = await options.adminToken(body.adminToken);
      return principal ? { subject: ADMIN_TOKEN_SUBJECT, role: "admin" } : undefined;
    }
    const { username, password } = body;
    if (typeof username !== "string" || typeof password !== "string" || password.length > 1024)
      return undefined;
    const user =
      username.length <= 253 ? await options.store.get<User>("User", undefined, username) : undefined;
    const hash = user?.spec.passwordHash;
    const role = highestRole(user?.spec.roles);
    if (!hash || !role) {
      await verifyPassword(password, await dummyPasswordHash());
      return undefined;
    }
    return (await verifyPassword(password, hash)) ? { subject: username, role } : undefined;
  }

  return {
    async handleLogin(req, res) {
      if (req.method !== "POST") {
        res.setHeader("Allow", "POST");
        return sendStatus(res, 405, "MethodNotAllowed", "log in with POST");
      }
      const body = await readJsonObject(req, MAX_BODY);
      if (!body)
        return sendStatus(res, 400, "BadRequest", 'expected JSON {"username", "password"} or {"adminToken"}');
      // Counted now, before the password work: see login-limits.ts.
      const username = typeof body.username === "string" ? body.username : undefined;
      const admission = limits.admit(req.socket.remoteAddress, username);
      if ("retryAfter" in admission) {
        const wait = admission.retryAfter;
        res.setHeader("Retry-After", String(wait));
        return sendStatus(res, 429, "TooManyRequests", `too many failed logins: try again in ${wait} s`);
      }
      let who: Awaited<ReturnType<typeof check>>;
      try {
        who = await check(body);
      } catch (error) {
        admission.takeBack(); // the hub failed, not the password: no failed login to count
        throw error;
      }
      if (!who) return sendStatus(res, 401, "Unauthorized", "wrong user name or password");
      admission.takeBack();
      const iat = Math.floor(clock.now() / 1000);
      const exp = iat + ttl;
      const response: LoginResponse = {
        token: signJwt({ sub: who.subject, role: who.role, iat, exp }, options.secret),
        subject: who.subject,
        role: who.role,
        expiresAt: new Date(exp * 1000).toISOString(),
      };
      sendJson(res, 200, response);
    },

    async authenticator(token) {
      const claims = verifyJwt(token, options.secret, Math.floor(clock.now() / 1000));
      if (!claims) return undefined;
      if (claims.sub === ADMIN_TOKEN_SUBJECT) return { subject: claims.sub, role: claims.role };
      // A User removed from git, or demoted, loses access at once rather than at expiry.
      const user = await options.store.get<User>("User", undefined, claims.sub);
      const current = highestRole(user?.spec.roles);
      if (!current) return undefined;
      const role = ROLE_ORDER[Math.min(ROLE_ORDER.indexOf(current), ROLE_ORDER.indexOf(claims.role))]!;
      return { subject: claims.sub, role };
    },
  };
}
