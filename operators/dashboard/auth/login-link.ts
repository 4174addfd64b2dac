// The one-click admin login `rlark up` prints (issue 31 item 13). The link carried the permanent
// admin token, so anyone who saw the terminal, its scrollback or a shared screenshot held the hub
// for good. It now carries a random code, kept in memory only, that POST LOGIN_LINK_PATH exchanges
// once for an admin session, within minutes of being made. A used, expired or unknown code is
// refused alike; codes are 256 bits, so guessing one is no attack and needs no rate limit.

import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Clock } from "../../lib/clock.ts";
import { readJsonObject, sendJson, sendStatus } from "../../lib/http/index.ts";
import { signJwt } from "./jwt.ts";
import { ADMIN_TOKEN_SUBJECT, type LoginResponse } from "./sessions.ts";

export const LOGIN_LINK_PATH = "/api/v1/auth/login-link";
/** How long a code may wait to be used, unless told otherwise. */
export const LOGIN_LINK_TTL_MS = 10 * 60_000;
const MAX_BODY = 1024;
/** Codes not yet used that are kept; making one more forgets the oldest. */
const MAX_CODES = 16;

export interface LoginLinksOptions {
  /** Signs the sessions, as password logins' are signed. */
  secret: Buffer;
  /** The session a code opens lasts as long as a password login's. */
  sessionTtlSeconds: number;
  /** How long a code may wait to be used. Default LOGIN_LINK_TTL_MS. */
  codeTtlMs?: number;
  clock: Clock;
}

export interface LoginLinks {
  /** A new single-use code. */
  issue(): string;
  /** POST LOGIN_LINK_PATH `{"code": "…"}`: an admin session, once per code. */
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
}

export function createLoginLinks(options: LoginLinksOptions): LoginLinks {
  const codeTtlMs = options.codeTtlMs ?? LOGIN_LINK_TTL_MS;
  /** Code → when it expires; a Map iterates oldest first. */
  const codes = new Map<string, number>();

  return {
    issue() {
      for (const code of codes.keys()) {
        if (codes.size < MAX_CODES) break;
        codes.delete(code);
      }
      const code = randomBytes(32).toString("base64url");
      codes.set(code, options.clock.now() + codeTtlMs);
      return code;
    },
    async handle(req, res) {
      if (req.method !== "POST") {
        res.setHeader("Allow", "POST");
        return sendStatus(res, 405, "MethodNotAllowed", 'exchange a login link\'s code with POST {"code"}');
      }
      const body = await readJsonObject(req, MAX_BODY);
      const code = typeof body?.code === "string" ? body.code : undefined;
      if (code === undefined) return sendStatus(res, 400, "BadRequest", 'expected JSON {"code": "…"}');
      const expiresAt = codes.get(code);
      // Spent by this attempt whatever its outcome: a code is good for one try.
      codes.delete(code);
      res.setHeader("Cache-Control", "no-store");
      if (expiresAt === undefined || expiresAt <= options.clock.now())
        return sendStatus(
          res,
          401,
          "Unauthorized",
          "this login link was used already or has expired: log in with the admin token (<data-dir>/admin-token)",
        );
      const iat = Math.floor(options.clock.now() / 1000);
      const exp = iat + options.sessionTtlSeconds;
      const response: LoginResponse = {
        token: signJwt({ sub: ADMIN_TOKEN_SUBJECT, role: "admin", iat, exp }, options.secret),
        subject: ADMIN_TOKEN_SUBJECT,
        role: "admin",
        expiresAt: new Date(exp * 1000).toISOString(),
      };
      sendJson(res, 200, response);
    },
  };
}
