import type { KubeObject } from "../store/index.ts";

/**
 * Fields that never leave the hub: a User's password hash and a DomainPeer's private key. The API
 * serves objects for people and dashboards; agents get keys through their own tunnel only.
 */
const SECRET_SPEC_FIELDS: Record<string, readonly string[]> = {
  User: ["passwordHash"],
  DomainPeer: ["key"],
};

export function redact<T extends KubeObject>(object: T): T {
  const fields = SECRET_SPEC_FIELDS[object.kind];
  if (!fields || typeof object.spec !== "object" || object.spec === null) return object;
  const spec = { ...(object.spec as Record<string, unknown>) };
  for (const field of fields) delete spec[field];
  return { ...object, spec };
}
