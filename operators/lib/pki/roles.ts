import { PkiError } from "./errors.ts";

/**
 * Every identity the hub CA vouches for. `hub` certifies the hub's own SSH host key; `webhook` an
 * admission webhook's TLS serving certificate (the embodied runtime's device webhook).
 */
export const ROLES = ["agent", "domain", "ssh-guest", "admin", "hub", "webhook"] as const;
export type Role = (typeof ROLES)[number];

export function isRole(value: unknown): value is Role {
  return typeof value === "string" && (ROLES as readonly string[]).includes(value);
}

// Subject fields are parsed back from node:crypto's "KEY=value" lines, so names are restricted
// to characters that can never be mistaken for separators or escapes.
const NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,252}$/;

export function checkName(field: string, value: string): void {
  if (!NAME.test(value)) {
    throw new PkiError(
      "invalid-request",
      `${field} ${JSON.stringify(value)} is not a valid name: use letters, digits, '.', '_', '@' or '-'`,
    );
  }
}
