// HS256 JSON Web Tokens (RFC 7519) for dashboard sessions: only what the hub needs, no library.
// The header is fixed, so a token claiming another algorithm ("none", RS256) never verifies.
import { createHmac, timingSafeEqual } from "node:crypto";
import type { Principal } from "../../lib/http/index.ts";

export interface SessionClaims {
  sub: string;
  role: Principal["role"];
  /** Seconds since the epoch. */
  iat: number;
  exp: number;
}

const HEADER = Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT" })).toString("base64url");
const ROLES: readonly string[] = ["viewer", "user", "admin"];

function sign(input: string, secret: Buffer): string {
  return createHmac("sha256", secret).update(input).digest("base64url");
}

export function signJwt(claims: SessionClaims, secret: Buffer): string {
  const payload = Buffer.from(JSON.stringify(claims)).toString("base64url");
  return `${HEADER}.${payload}.${sign(`${HEADER}.${payload}`, secret)}`;
}

/** The claims of a well-formed, correctly signed, unexpired token; undefined otherwise. */
export function verifyJwt(token: string, secret: Buffer, nowSeconds: number): SessionClaims | undefined {
  const parts = token.split(".");
  if (parts.length !== 3 || parts[0] !== HEADER) return undefined;
  const expected = Buffer.from(sign(`${parts[0]}.${parts[1]}`, secret));
  const given = Buffer.from(parts[2]!);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(parts[1]!, "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
  if (typeof claims !== "object" || claims === null) return undefined;
  const { sub, role, iat, exp } = claims as Record<string, unknown>;
  if (typeof sub !== "string" || typeof role !== "string" || !ROLES.includes(role)) return undefined;
  if (typeof iat !== "number" || typeof exp !== "number" || exp <= nowSeconds || iat > nowSeconds + 60)
    return undefined;
  return { sub, role: role as Principal["role"], iat, exp };
}
