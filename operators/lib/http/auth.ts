import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

/** Who made a request, once authenticated. */
export interface Principal {
  subject: string;
  role: "viewer" | "user" | "admin";
}

/** Turns a bearer token into a principal, or undefined when it proves nothing. */
export type Authenticator = (token: string) => Principal | undefined | Promise<Principal | undefined>;

export function bearerToken(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)$/i.exec(header);
  return match?.[1];
}

/** Accepts the hub's admin token (`<data-dir>/admin-token`), compared in constant time. */
export function adminTokenAuthenticator(adminToken: string): Authenticator {
  const expected = Buffer.from(adminToken);
  return (token) => {
    const given = Buffer.from(token);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    return { subject: "admin-token", role: "admin" };
  };
}

/** The first authenticator that recognises the token wins (admin token, then user JWTs, ...). */
export function anyOf(...authenticators: Authenticator[]): Authenticator {
  return async (token) => {
    for (const authenticate of authenticators) {
      const principal = await authenticate(token);
      if (principal) return principal;
    }
    return undefined;
  };
}
